"""Flows Lab on a managed 3-primary Valkey Cluster: the client, the hub, the
site under uvicorn and `emqlab reset`.

Keyspace notifications are node-local, so the hub subscribes on every
primary; a PUBLISH is broadcast to every node, so the hub hands each event
on once. The site finds the cluster by itself (`INFO cluster`) when
EMQLAB_VALKEY_CLUSTER is not set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from redis.asyncio.cluster import RedisCluster

from server.emq import keyspace
from server.live import hub as stream
from server.live.hub import EVENTS_CHANNEL, Hub, publish_reset
from server.valkey import connect
from server.valkey.process import ValkeyCluster
from tests.support import Events, running, sandbox_of

ROOT = Path(__file__).resolve().parents[2]


async def wait_for(condition, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def notify_flags(conn: RedisCluster) -> dict[str, str]:
    found = await conn.config_get("notify-keyspace-events", target_nodes=RedisCluster.PRIMARIES)
    return {name: value["notify-keyspace-events"] for name, value in found.items()}


def test_open_client_finds_the_cluster_or_is_told(valkey_cluster: ValkeyCluster, valkey, monkeypatch) -> None:
    monkeypatch.delenv(connect.CLUSTER_ENV, raising=False)
    assert isinstance(connect.open_client(valkey_cluster.url), RedisCluster)
    assert not isinstance(connect.open_client(valkey.url), RedisCluster)
    monkeypatch.setenv(connect.CLUSTER_ENV, "1")
    assert isinstance(connect.open_client(valkey_cluster.url), RedisCluster)
    assert connect.wants_cluster(valkey.url) is True  # asked for: not detected


async def test_notifications_are_enabled_on_every_primary(cluster_conn) -> None:
    await cluster_conn.config_set("notify-keyspace-events", "", target_nodes=RedisCluster.PRIMARIES)
    assert set((await notify_flags(cluster_conn)).values()) == {""}
    assert await stream.enable_notifications(cluster_conn) is True
    flags = await notify_flags(cluster_conn)
    assert len(flags) == 3 and all("K" in f and "A" in f for f in flags.values())


async def test_the_hub_subscribes_on_every_primary_and_hands_each_event_on_once(
    cluster_conn, valkey_cluster: ValkeyCluster, monkeypatch
) -> None:
    monkeypatch.setattr(stream, "TOPOLOGY_EVERY", 0.2)
    hub = Hub(valkey_cluster.url, cluster=True)
    await hub.start()
    try:
        await wait_for(lambda: hub.up)
        primaries = sorted(n.name for n in cluster_conn.get_primaries())
        assert sorted(hub.nodes) == primaries and hub.notifications_on
        # one queue per primary: each write's notification comes from its own node
        queues = {}
        for i in range(200):
            queue = f"s0123456789.q{i}"
            node = cluster_conn.get_node_from_key(keyspace.queue_key(queue, "pending")).name
            queues.setdefault(node, queue)
        assert len(queues) == 3
        async with hub.listen("s0123456789") as sub:
            for queue in queues.values():
                await cluster_conn.zadd(keyspace.queue_key(queue, "pending"), {"JOBx": 1})
            await publish_reset(cluster_conn, ["s0123456789"], by="test")
            got = []
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and (len([n for n in got if n.kind == "effect"]) < 3
                                                   or not any(n.kind == "reset" for n in got)):
                with contextlib.suppress(TimeoutError):
                    got.append(await asyncio.wait_for(sub.queue.get(), 0.5))
            await asyncio.sleep(0.3)  # a duplicate would arrive by now
            while not sub.queue.empty():
                got.append(sub.queue.get_nowait())
        effects = {n.data["queue"] for n in got if n.kind == "effect"}
        assert effects == set(queues.values())
        resets = [n for n in got if n.kind == "reset"]
        assert len(resets) == 1, "the cluster broadcast the PUBLISH through every node; the hub passes it on once"
        # one subscriber of the events channel on each primary (redis-py sums them)
        numsub = await cluster_conn.execute_command(
            "PUBSUB NUMSUB", EVENTS_CHANNEL, target_nodes=RedisCluster.PRIMARIES
        )
        assert [tuple(x) for x in numsub] == [(EVENTS_CHANNEL, 3)]

        # a node's subscription drops: the hub reconnects and enables notifications there again
        victim = primaries[0]
        node = cluster_conn.get_node(node_name=victim)
        await cluster_conn.config_set("notify-keyspace-events", "", target_nodes=node)
        await cluster_conn.execute_command("CLIENT KILL", "TYPE", "pubsub", target_nodes=node)
        deadline = time.monotonic() + 10
        while True:
            flags = await notify_flags(cluster_conn)
            if "K" in flags[victim] and hub.up:
                break
            assert time.monotonic() < deadline, f"notifications not enabled again on {victim}: {flags}"
            await asyncio.sleep(0.1)

        # the topology changes: the hub follows it (a primary leaves, then comes back)
        real = hub.primaries

        async def two() -> list[str]:
            return (await real())[1:]

        monkeypatch.setattr(hub, "primaries", two)
        await wait_for(lambda: sorted(hub.nodes) == primaries[1:])
        assert hub.up
        monkeypatch.setattr(hub, "primaries", real)
        await wait_for(lambda: sorted(hub.nodes) == primaries and hub.up)
    finally:
        await hub.stop()
    assert all(task.done() for task in hub.nodes.values())


def test_the_site_on_a_cluster_streams_acts_and_resets(valkey_cluster: ValkeyCluster) -> None:
    env = {connect.CLUSTER_ENV: ""}  # not told: the site finds the cluster by itself
    with running(valkey_cluster.url, env) as site:
        client = site.visitor("/flows/cross-queue")
        state = client.get("/api/widgets/outbox/state").json()["snapshot"]
        assert state["picture"]["cluster"] is True
        assert all(view["node"].startswith("127.0.0.1:") for view in state["queues"])
        with client.stream("GET", "/api/stream", params={"widgets": "outbox,fanin"}) as response:
            events = Events(response)
            assert events.until("status")[-1][1]["valkey"] == "up"
            answer = client.post("/api/widgets/outbox/one-script")
            assert answer.status_code == 200, answer.text
            outcome = answer.json()["outcome"]
            assert outcome["kind"] == "refused"
            assert "CROSSSLOT Keys in request don't hash to the same slot" in outcome["text"]
            assert client.post("/api/widgets/outbox/complete-child").status_code == 200
            effect = events.until("effect", widget="outbox")[-1][1]
            assert ".outbox.mail}" in effect["key"]
            assert client.post("/api/widgets/fanin/complete-child").status_code == 200
            events.until("effect", widget="fanin")
        sandbox = sandbox_of(client)
        # `emqlab reset` from a shell, against the cluster (found by INFO cluster)
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "reset", "--sandbox", sandbox],
            env={**os.environ, "PYTHONPATH": str(ROOT), "EMQLAB_VALKEY_URL": valkey_cluster.url},
            capture_output=True, text=True, timeout=30, cwd=str(ROOT), check=False,
        )
        assert done.returncode == 0, done.stderr
        assert f"reset sandbox {sandbox}" in done.stdout
        removed = int(done.stdout.split(":")[-1].split()[0])
        assert removed > 5
        after = client.get("/api/widgets/fanin/state").json()["snapshot"]
        assert json.dumps(after).count("JOBchild") >= 3  # landed again, fresh


def test_one_script_on_one_server_answers_409(valkey) -> None:
    with running(valkey.url) as site:
        client = site.visitor("/flows/cross-queue")
        assert client.get("/api/widgets/outbox/state").json()["snapshot"]["picture"]["cluster"] is False
        answer = client.post("/api/widgets/outbox/one-script")
        assert answer.status_code == 409
        assert "needs a cluster" in answer.json()["error"] and "emqlab serve --cluster" in answer.json()["error"]
