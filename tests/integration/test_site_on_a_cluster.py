"""Flows Lab on a managed 3-primary Valkey Cluster (ValkeyCluster, real
`valkey-server --cluster-enabled yes` processes): the hub and the site.

Keyspace notifications are node-local, so the hub subscribes on every
primary (two patterns each) and follows the topology; a PUBLISH reaches
every node, so the hub hands each lab event on once. The site finds the
cluster by itself (`INFO cluster`) and streams, acts, runs the console and
resets there.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster

from server.emq import keyspace
from server.lifecycle import resets
from server.live import events
from server.live import hub as hub_module
from server.live.hub import Hub
from server.live.streams import Notice, Streams, Worded, frame
from server.valkey.process import ValkeyCluster
from tests.integration.conftest import cluster_client, flush
from tests.support import LiveSite, deps, running, sandbox_of, streaming
from tests.widgets import lab

SANDBOX = "s0123456789"


async def wait_for(condition: Any, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def notify_flags(conn: RedisCluster) -> dict[str, str]:
    found: dict[str, dict[str, str]] = await conn.config_get(  # type: ignore[assignment]
        "notify-keyspace-events", target_nodes=RedisCluster.PRIMARIES)
    return {name: value["notify-keyspace-events"] for name, value in found.items()}


@pytest.fixture
async def hub(valkey_cluster: ValkeyCluster, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Hub, list[Any]]]:
    """A hub on the cluster whose streams' reads are recorded (no widget is read)."""
    monkeypatch.setattr(hub_module, "TOPOLOGY_EVERY", 0.2)
    reads: list[Any] = []

    class Painter:
        async def frame(self, sandbox: str, widget: str, effects: Sequence[Worded]) -> bytes:
            reads.append((sandbox, widget))
            return frame("widget", b"{}")

    made = Hub(valkey_cluster.url, Streams(Painter()), lambda queue: queue.partition(".")[2] or None, cluster=True)
    await made.start()
    try:
        await wait_for(lambda: made.up)
        yield made, reads
    finally:
        await made.stop()
    assert all(task.done() for task in made.tasks.values())


def queue_per_primary(conn: RedisCluster) -> dict[str, str]:
    """One queue of SANDBOX on each primary: node name -> queue."""
    found: dict[str, str] = {}
    for i in range(300):
        queue = f"{SANDBOX}.q{i}"
        node = conn.get_node_from_key(keyspace.queue_key(queue, "pending"))
        assert node is not None
        found.setdefault(node.name, queue)
    return found


async def drained(sub: Any, wanted: Any, seconds: float = 5.0) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not wanted(got):
        with contextlib.suppress(TimeoutError):
            got.append(await asyncio.wait_for(sub.queue.get(), 0.2))
    return got


async def test_the_hub_listens_on_every_primary_with_two_patterns_and_hands_each_event_on_once(
    cluster_conn: RedisCluster, hub: tuple[Hub, list[Any]]
) -> None:
    live, reads = hub
    primaries = sorted(n.name for n in cluster_conn.get_primaries())
    assert sorted(live.tasks) == primaries and live.notifications_on
    for node in cluster_conn.get_primaries():
        assert await cluster_conn.execute_command("PUBSUB NUMPAT", target_nodes=node) == 2, node.name
    queues = queue_per_primary(cluster_conn)
    assert len(queues) == 3
    widgets = tuple(q.partition(".")[2] for q in queues.values())
    with live.streams.open(SANDBOX, widgets) as sub:
        for queue in queues.values():
            await cluster_conn.zadd(keyspace.queue_key(queue, "pending"), {"JOBx": 1})
        await events.publish(cluster_conn, "reset", [SANDBOX], {"by": "test"})
        got = await drained(sub, lambda got: len({w for _, w in reads}) == 3
                            and any(isinstance(g, Notice) for g in got))
        await asyncio.sleep(0.3)  # a second copy of the PUBLISH would be here by now
        got += sub.drain()
    assert {widget for _, widget in reads} == set(widgets)  # each primary's write reached the hub
    resets_told = [g for g in got if isinstance(g, Notice) and g.kind == "reset"]
    assert len(resets_told) == 1, "the cluster delivers a PUBLISH through every node; the hub hands it on once"


async def test_the_hub_switches_notifications_on_again_on_a_node_whose_subscription_dropped(
    cluster_conn: RedisCluster, hub: tuple[Hub, list[Any]]
) -> None:
    live, _ = hub
    victim = sorted(n.name for n in cluster_conn.get_primaries())[0]
    node = cluster_conn.get_node(node_name=victim)
    await cluster_conn.config_set("notify-keyspace-events", "", target_nodes=node)
    await cluster_conn.execute_command("CLIENT KILL", "TYPE", "pubsub", target_nodes=node)
    deadline = time.monotonic() + 10
    while "K" not in (await notify_flags(cluster_conn))[victim] or not live.up:
        assert time.monotonic() < deadline, "notifications were not switched on again"
        await asyncio.sleep(0.1)


async def test_the_hub_follows_the_topology_as_a_primary_leaves_and_comes_back(
    cluster_conn: RedisCluster, hub: tuple[Hub, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    live, _ = hub
    primaries = sorted(n.name for n in cluster_conn.get_primaries())
    real = hub_module.read_primaries

    async def without_first(seeds: Any) -> list[str]:
        return [p for p in await real(seeds) if p != primaries[0]]

    monkeypatch.setattr(hub_module, "read_primaries", without_first)
    await wait_for(lambda: sorted(live.tasks) == primaries[1:])
    assert live.up
    monkeypatch.setattr(hub_module, "read_primaries", real)
    await wait_for(lambda: sorted(live.tasks) == primaries and live.up)


@pytest.fixture(scope="module")
def cluster_site(valkey_cluster: ValkeyCluster) -> Iterator[LiveSite]:
    async def flushed() -> None:
        client = await cluster_client(valkey_cluster)
        await flush(client)
        await client.aclose()

    asyncio.run(flushed())
    with running(valkey_cluster.url, {"EMQLAB_VALKEY_CLUSTER": ""}) as site:  # not told: it finds the cluster
        yield site


def test_the_site_on_a_cluster_streams_and_acts_with_each_queue_on_its_primary(cluster_site: LiveSite) -> None:
    client = cluster_site.visitor()
    state = client.get("/api/widgets/fanin/state").json()["snapshot"]
    assert all(view["node"].startswith("127.0.0.1:") for view in state["queues"])
    with streaming(client, "fanin,native,enqueue-stepper") as page:
        assert page.until("status")[-1][1]["valkey"] == "up"
        acted = client.post("/api/widgets/fanin/complete-child", json={})
        assert acted.status_code == 200, acted.text
        seen = page.until("widget", widget="fanin", ver=acted.json()["ver"])
        assert any(kind == "effect" and data["key"].startswith("emq:{fanin}:") for kind, data in seen)
        assert deps(seen[-1][1]) == 2
        for widget, action in (("native", "script"), ("enqueue-stepper", "run-atomically")):
            answer = client.post(f"/api/widgets/{widget}/{action}", json={})
            assert answer.status_code == 200, answer.text
            page.until("widget", widget=widget, ver=answer.json()["ver"])
        line = client.post("/api/console", json={"command": "GET emq:{fanin}:job:JOBparent:dependencies"})
        assert line.status_code == 200 and line.json()["reply_lines"] == ['"2"'], line.text


def test_on_a_cluster_a_widgets_reset_and_an_instructors_reset_land_the_scenario_again(
    cluster_site: LiveSite, valkey_cluster: ValkeyCluster
) -> None:
    client = cluster_site.visitor()
    sandbox = sandbox_of(client)
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    assert client.post("/api/widgets/fanin/reset", json={}).status_code == 200
    assert deps(client.get("/api/widgets/fanin/state").json()["snapshot"]) == 3
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    with streaming(client) as page:
        page.until("widget", widget="fanin")

        async def reset() -> resets.Report:
            conn = await cluster_client(valkey_cluster)
            try:
                return await resets.reset_sandboxes(lab(conn), [sandbox])
            finally:
                await conn.aclose()

        report = asyncio.run(reset())
        assert report.reset == [sandbox] and report.failed == {}
        page.until("reset")
        assert deps(page.until("widget", widget="fanin")[-1][1]) == 3
