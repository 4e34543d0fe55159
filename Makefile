# Flows Lab — the two commands of the README: `make serve` and `make test`.
# Every target installs what it needs first; when it is already there, it
# says nothing and moves on.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -y -qq -o Dpkg::Use-Pty=0
BACKPORTS := /etc/apt/sources.list.d/bookworm-backports.list
PYTEST_FLAGS ?= -q

.PHONY: serve test test-unit test-e2e bench screenshots valkey chromium system venv clean

serve: venv valkey
	$(VENV)/bin/emqlab serve

test: venv valkey chromium
	$(PY) -m pytest tests --ignore=tests/e2e $(PYTEST_FLAGS)
	$(PY) -m pytest tests/e2e $(PYTEST_FLAGS)

test-unit: venv valkey
	$(PY) -m pytest tests --ignore=tests/e2e $(PYTEST_FLAGS)

test-e2e: venv valkey chromium
	$(PY) -m pytest tests/e2e $(PYTEST_FLAGS)

bench: venv valkey chromium
	@[ -x $(VENV)/bin/py-spy ] || $(PY) -m pip install -q --disable-pip-version-check -e '.[test,bench]' 2>&1 | grep -v '^WARNING: Location' || true
	$(PY) -m bench.run

screenshots: venv valkey chromium
	$(PY) -m tools.screenshots

venv: $(STAMP)
	@true

$(STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' 2>&1 | grep -v '^WARNING: Location' || true
	@$(PY) -c 'import server, starlette, redis, playwright' 
	@touch $(STAMP)

# valkey-server 8 comes from bookworm-backports; add that source when missing,
# on the mirror the machine already uses (tools/backports-source.sh).
valkey:
	@command -v valkey-server >/dev/null && command -v valkey-cli >/dev/null || { \
	  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then \
	    tools/backports-source.sh | $(SUDO) tee $(BACKPORTS) >/dev/null; \
	  fi; \
	  $(APT) update && $(APT) install -t bookworm-backports valkey-server valkey-tools; }

chromium:
	@command -v chromium >/dev/null || { $(APT) update && $(APT) install chromium; }
	@command -v wrk >/dev/null || { $(APT) update && $(APT) install wrk; }

clean:
	rm -rf $(VENV) .pytest_cache
