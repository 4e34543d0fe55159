"""Shared fixtures: one real valkey-server per test session, a clean db per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis

from server.valkey.process import ValkeyProcess


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
