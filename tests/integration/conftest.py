"""Fixtures and helpers for the host library's integration tests.

Everything runs against the session's real valkey-server (``valkey`` from
tests/conftest.py). Besides ``conn`` (decode_responses=True) there is
``raw_conn`` (decode_responses=False), ``conn_factory`` for several
independent clients, and ``cluster_conn``: a client of a managed 3-primary
Valkey Cluster (``ValkeyCluster`` from server/valkey/process.py, joined with
``valkey-cli --cluster create``), where a script whose keys span two slots,
or reach another node, is refused.

The flow-semantics modules (FLOW_MODULES) run every test twice: ``conn`` on
the single server, then ``conn`` on the cluster (a ``RedisCluster`` client,
every primary flushed around each test). The cluster's slot map puts
``orders`` and ``mail`` on one primary and ``billing`` on another, so the
cross-queue tests that use ``billing`` cross nodes (checked in
test_cross_queue_flow.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from server.emq import keyspace
from server.valkey.process import ValkeyCluster, ValkeyProcess
from tests.support import LiveSite, running

# Modules whose tests run on one server AND on the 3-primary cluster.
FLOW_MODULES = {
    "test_same_queue_flow", "test_cross_queue_flow", "test_failure_policy", "test_pump",
    "test_tree_and_results", "test_bulk_flows", "test_property_interleavings", "test_native_module",
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    module = metafunc.module.__name__.rpartition(".")[2]
    if module in FLOW_MODULES and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ["single", "cluster"], indirect=True)


@pytest.fixture(scope="session")
def valkey_cluster() -> Iterator[ValkeyCluster]:
    """Three primaries, real `valkey-server --cluster-enabled yes` processes.
    A missing valkey-cli fails (ValkeyCluster.start says how to install it)."""
    with ValkeyCluster(3) as cluster:
        yield cluster


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """"single" unless the module is one of FLOW_MODULES (then both, in turn)."""
    return str(getattr(request, "param", "single"))


async def cluster_client(cluster: ValkeyCluster, decode: bool = True) -> RedisCluster:
    client = RedisCluster.from_url(cluster.url, decode_responses=decode)
    await client.initialize()
    return client


async def _open(request: pytest.FixtureRequest, backend: str, decode: bool = True) -> Any:
    if backend == "cluster":
        return await cluster_client(request.getfixturevalue("valkey_cluster"), decode)
    return aioredis.Redis.from_url(request.getfixturevalue("valkey").url, decode_responses=decode)


async def flush(client: Any) -> None:
    if isinstance(client, RedisCluster):
        await client.flushall(target_nodes=RedisCluster.PRIMARIES)
    else:
        await client.flushdb()


@pytest.fixture
async def conn(request: pytest.FixtureRequest, backend: str) -> AsyncIterator[Any]:
    client = await _open(request, backend)
    await flush(client)
    try:
        yield client
    finally:
        await flush(client)
        await client.aclose()


def flow(parent: str, *children: Any) -> dict[str, Any]:
    """A flow dict; a child is an id, or a dict merged over id/payload."""
    specs = []
    for child in children:
        if isinstance(child, str):
            specs.append({"id": child, "payload": f"p-{child}"})
        else:
            specs.append({"payload": f"p-{child['id']}", **child})
    return {"parent": {"id": parent, "payload": f"p-{parent}"}, "children": specs}


SANDBOX = "s0123456789"  # the sandbox the widget tests act in


async def act(widget: Any, ctx: Any, slug: str, body: dict[str, Any] | None = None) -> Any:
    """One widget action the way the API runs it: under the widget's lock,
    recorded by `finish` (readings filled in); returns the outcome."""
    return (await widget.run(ctx, slug, body or {}))[0]


async def dbsize(conn: Any) -> int:
    """Keys in the whole keyspace (every primary of a cluster)."""
    if isinstance(conn, RedisCluster):
        return int(await conn.dbsize(target_nodes=RedisCluster.PRIMARIES))
    return int(await conn.dbsize())


async def all_keys(conn: Any) -> set[str]:
    """Every key name (every primary of a cluster)."""
    if isinstance(conn, RedisCluster):
        found = await conn.keys("*", target_nodes=RedisCluster.PRIMARIES)
    else:
        found = await conn.keys("*")
    return {k.decode() if isinstance(k, bytes) else k for k in found}


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
async def raw_conn(request: pytest.FixtureRequest, backend: str) -> AsyncIterator[Any]:
    """A decode_responses=False client of the same Valkey as ``conn``."""
    client = await _open(request, backend, decode=False)
    await flush(client)
    try:
        yield client
    finally:
        await flush(client)
        await client.aclose()


ConnFactory = Callable[[], Awaitable[Any]]


@pytest.fixture
async def conn_factory(request: pytest.FixtureRequest, backend: str, conn: Any) -> AsyncIterator[ConnFactory]:
    """Independent clients of the same Valkey as ``conn`` (cluster or not)."""
    made: list[Any] = []

    async def make() -> Any:
        client = await _open(request, backend)
        made.append(client)
        return client

    try:
        yield make
    finally:
        for client in made:
            await client.aclose()


@pytest.fixture
async def cluster_conn(valkey_cluster: ValkeyCluster) -> AsyncIterator[RedisCluster]:
    client = await cluster_client(valkey_cluster)
    await flush(client)
    try:
        yield client
    finally:
        await flush(client)
        await client.aclose()


# -- the real site under uvicorn: one per worker with the default settings, and one
# per module that needs settings (or a Valkey) of its own -------------------------


@pytest.fixture(scope="module")
def valkey_server() -> Iterator[ValkeyProcess]:
    """A valkey-server of the module's own (for a site of the module's own)."""
    with ValkeyProcess() as server:
        yield server


@pytest.fixture(scope="session")
def site() -> Iterator[LiveSite]:
    """The site with the default settings on a Valkey of its own, shared by every
    module that does not define a `site` of its own: a site's start is the largest
    cost of this suite (about 1.3 CPU-seconds). A test that needs an empty Valkey
    asks for `clean`; one that reads keys reads its own sandbox's."""
    with ValkeyProcess() as server, running(server.url) as live:
        yield live


@pytest.fixture
def clean(site: LiveSite) -> LiveSite:
    """The module's live site with every key gone but the cookie secret."""
    r = site.redis()
    for key in r.scan_iter("*"):
        if key != "lab:secret":
            r.delete(key)
    return site
