"""Shared fixtures: one real valkey-server per test session, a clean db per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis

from server.valkey import native
from server.valkey.process import ValkeyProcess


def pytest_sessionstart(session: pytest.Session) -> None:
    # Every managed valkey-server loads the EMQ module when it is built; `make
    # test` builds it first, and a bare pytest run builds it here.
    if not native.build():
        raise pytest.UsageError("the EMQ module did not build: run `make module` and read its error")


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
