"""Shared fixtures: one real valkey-server per test session, a clean db per test."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from server.valkey import native
from server.valkey.process import ValkeyProcess
from tests import lua_folder

UNIT = Path(__file__).parent / "unit"


def _unit_only(config: pytest.Config) -> bool:
    """Whether this run collects nothing but tests/unit (no Valkey, so no module)."""
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args]
    return bool(paths) and all(path == UNIT or UNIT in path.parents for path in paths)


def pytest_sessionstart(session: pytest.Session) -> None:
    # Every managed valkey-server loads the EMQ module when it is built; `make
    # test` builds it first, and a bare pytest run builds it here. The unit
    # tests start no server, so a run of tests/unit alone never compiles it.
    if _unit_only(session.config):
        return
    if not native.built():
        done = subprocess.run(["make", "-s", "module"], cwd=native.ROOT, capture_output=True, text=True, check=False)
        if not native.built():
            said = (done.stderr or done.stdout)[-800:]
            raise pytest.UsageError(f"the EMQ module did not build (`make module`): {said}")


@pytest.fixture(scope="session")
def valkey() -> Iterator[ValkeyProcess]:
    with ValkeyProcess() as server:
        yield server


@pytest.fixture
async def conn(valkey: ValkeyProcess) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(valkey.url, decode_responses=True)
    await client.flushdb()
    try:
        yield client
    finally:
        await client.flushdb()
        await client.aclose()


@pytest.fixture
def scripts_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The registry pointed at a scratch folder (tests/lua_folder.py), its caches cleared around it."""
    yield from lua_folder.registry_reading(tmp_path, monkeypatch)
