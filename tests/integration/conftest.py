"""Fixtures and helpers for the host library's integration tests.

Everything runs against the session's real valkey-server (``valkey`` from
tests/conftest.py). Besides the shared ``conn`` (decode_responses=True) there
is ``raw_conn`` (decode_responses=False), ``conn_factory`` for several
independent clients, and ``cluster_conn``: a two-node Valkey cluster, where
a script whose keys span two slots, or reach another node, is refused.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from server.emq import keyspace
from server.valkey_process import ValkeyProcess, free_port


def flow(parent: str, *children: Any) -> dict[str, Any]:
    """A flow dict; a child is an id, or a dict merged over id/payload."""
    specs = []
    for child in children:
        if isinstance(child, str):
            specs.append({"id": child, "payload": f"p-{child}"})
        else:
            specs.append({"payload": f"p-{child['id']}", **child})
    return {"parent": {"id": parent, "payload": f"p-{parent}"}, "children": specs}


async def dbsize(conn: Any) -> int:
    return int(await conn.dbsize())


async def all_keys(conn: Any) -> set[str]:
    return {k.decode() if isinstance(k, bytes) else k for k in await conn.keys("*")}


async def row(conn: Any, queue: str, job_id: str) -> dict[str, str]:
    found = await conn.hgetall(keyspace.job_key(queue, job_id))
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in found.items()
    }


async def members(conn: Any, queue: str, state_set: str) -> list[str]:
    found = await conn.zrange(keyspace.queue_key(queue, state_set), 0, -1)
    return [m.decode() if isinstance(m, bytes) else m for m in found]


async def where(conn: Any, queue: str, job_id: str) -> list[str]:
    """The state sets of ``queue`` that hold ``job_id``."""
    return [s for s in keyspace.STATE_SETS if job_id in await members(conn, queue, s)]


async def claim_all(conn: Any, queue: str) -> dict[str, int]:
    """Claim every pending job of ``queue``: job id -> token."""
    from server.emq import jobs

    tokens: dict[str, int] = {}
    while (got := await jobs.claim(conn, queue)) is not None:
        tokens[got[0]] = got[1]
    return tokens


@pytest.fixture
async def raw_conn(valkey: ValkeyProcess) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(valkey.url, decode_responses=False)
    await client.flushdb()
    try:
        yield client
    finally:
        await client.flushdb()
        await client.aclose()


ConnFactory = Callable[[], Awaitable[aioredis.Redis]]


@pytest.fixture
async def conn_factory(valkey: ValkeyProcess, conn: aioredis.Redis) -> AsyncIterator[ConnFactory]:
    made: list[aioredis.Redis] = []

    async def make() -> aioredis.Redis:
        client = aioredis.Redis.from_url(valkey.url, decode_responses=True)
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            await client.aclose()


class ClusterValkey(ValkeyProcess):
    """A valkey-server in cluster mode (slots are assigned by the fixture)."""

    def __init__(self) -> None:
        super().__init__()
        # the bus port defaults to port + 10000, which may not exist
        self.bus_port = free_port()

    def command(self) -> list[str]:
        return super().command() + [
            "--cluster-enabled", "yes",
            "--cluster-config-file", str(self.dir / "nodes.conf"),
            "--cluster-port", str(self.bus_port),
        ]


def _cli(cli: str, port: int, *args: str) -> str:
    done = subprocess.run([cli, "-p", str(port), *args], capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture(scope="session")
def cluster_valkey() -> Iterator[ClusterValkey]:
    """Two cluster nodes: slots 0-4000 (queue `orders`) on the first, the rest
    (queues `mail`, `billing`) on the second, so cross-queue work really
    spans two servers and a script reaching outside its slot is refused."""
    cli = shutil.which("valkey-cli")
    if cli is None:
        pytest.fail("valkey-cli not installed: `make test` installs valkey-tools")
    with ClusterValkey() as first, ClusterValkey() as second:
        _cli(cli, first.port, "CLUSTER", "ADDSLOTSRANGE", "0", "4000")
        _cli(cli, second.port, "CLUSTER", "ADDSLOTSRANGE", "4001", "16383")
        _cli(cli, first.port, "CLUSTER", "MEET", "127.0.0.1", str(second.port), str(second.bus_port))
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if all("cluster_state:ok" in _cli(cli, node.port, "CLUSTER", "INFO") for node in (first, second)):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the two-node cluster did not come up")
        yield first


@pytest.fixture
async def cluster_conn(cluster_valkey: ClusterValkey) -> AsyncIterator[RedisCluster]:
    client = RedisCluster(host="127.0.0.1", port=cluster_valkey.port, decode_responses=True)
    await client.initialize()
    await client.flushdb()
    try:
        yield client
    finally:
        await client.flushdb()
        await client.aclose()
