"""The library on a RedisCluster client (a managed 3-primary Valkey cluster).

`orders` lives on one primary, `billing` on another. Valkey refuses a script
whose declared keys span two slots, and one that reaches a key outside its
declared slot, so this run proves every script keeps to its hashtag and that
cross-queue work crosses slots only through the host and the Pump. The
flow-semantics suites run whole on this cluster too (see conftest.py).
"""

from __future__ import annotations

import pytest
from redis.exceptions import RedisClusterException, ResponseError

from server.emq import errors, flows, jobs, keyspace, pump, results

from .conftest import flow

Q, MAIL = "orders", "billing"  # two slots on two different primaries


async def test_the_cluster_refuses_a_two_slot_script(cluster_conn) -> None:
    assert keyspace.queue_slot(Q) != keyspace.queue_slot(MAIL)
    assert len(cluster_conn.get_primaries()) == 3
    assert (cluster_conn.get_node_from_key(keyspace.queue_key(Q, "pending")).name
            != cluster_conn.get_node_from_key(keyspace.queue_key(MAIL, "pending")).name)
    two_slots = cluster_conn.register_script("return redis.call('EXISTS', KEYS[1], KEYS[2])")
    # redis-py's cluster client refuses it before sending (the server's own
    # CROSSSLOT reply is shown by test_site_on_a_cluster.py and the widget)
    with pytest.raises(RedisClusterException, match="same key slot"):
        await two_slots(keys=[keyspace.queue_key(Q, "pending"), keyspace.queue_key(MAIL, "pending")])
    stray = cluster_conn.register_script("return redis.call('EXISTS', ARGV[1])")
    with pytest.raises(ResponseError):
        await stray(keys=[keyspace.queue_key(Q, "pending")], args=[keyspace.queue_key(MAIL, "pending")])


async def test_flows_run_end_to_end_on_a_cluster(cluster_conn) -> None:
    conn = cluster_conn
    assert await flows.add(conn, Q, flow("JOBs", "JOBs1", "JOBs2")) == ("JOBs", ["JOBs1", "JOBs2"])
    await flows.add(conn, Q, flow("JOBx", {"id": "JOBx1", "queue": MAIL}, "JOBx2"))
    await flows.add(
        conn, Q, flow("JOBt", {"id": "JOBt1", "queue": MAIL, "children": [{"id": "JOBt11", "payload": "z"}]})
    )
    with pytest.raises(errors.KindRefused):
        await flows.add(conn, Q, flow("JOBk", "TASKk1"))
    landed = await flows.add_bulk(conn, Q, [flow("JOBb", "JOBb1"), flow("JOBc", "TASKc1")])
    assert landed == [("JOBb", ["JOBb1"])]
    for _ in range(6):
        for queue in (Q, MAIL):
            while (got := await jobs.claim(conn, queue)) is not None:
                job_id, token = got
                if job_id == "JOBb1":
                    assert await jobs.fail(conn, queue, job_id, token, "no", 1) == "dead"
                else:
                    await jobs.complete(conn, queue, job_id, token)
        await pump.deliver_flow_completions(conn, MAIL, 10)
        await pump.deliver_flow_completions_aged(conn, MAIL, 10, 3)
    for parent in ("JOBs", "JOBx", "JOBt"):
        assert await results.dependencies(conn, Q, parent) == 0
        assert await conn.exists(keyspace.job_key(Q, parent)) == 0  # released, ran, completed
    assert await conn.hget(keyspace.job_key(Q, "JOBb"), "state") == "failed"
    assert set(await results.children_values(conn, Q, "JOBx")) == {"JOBx1", "JOBx2"}
    assert await results.ignored_failures(conn, Q, "JOBb") == {}
    with pytest.raises(jobs.Gone):
        await jobs.complete(conn, Q, "JOBs1", 1)


async def test_a_flushed_script_cache_reloads_itself_on_a_cluster(cluster_conn) -> None:
    """NOSCRIPT recovery: after SCRIPT FLUSH on every primary, the next call
    loads the script again (on every primary) and runs."""
    conn = cluster_conn
    await flows.add(conn, Q, flow("JOBp", "JOBa", {"id": "JOBm", "queue": MAIL}))
    for node in conn.get_primaries():
        await conn.execute_command("SCRIPT", "FLUSH", target_nodes=node)
    claimed = await jobs.claim(conn, MAIL)
    assert claimed == ("JOBm", 1)
    await jobs.complete(conn, MAIL, "JOBm", 1, result="ok")
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 1
    assert await results.children_values(conn, Q, "JOBp") == {"JOBm": "ok"}


async def test_the_server_names_crossslot_itself(cluster_conn) -> None:
    """What the outbox widget's "Try it as one script" shows: the real
    enqueue_flow, its KEYS over two queues, sent straight to the first key's
    node, is refused by the server with CROSSSLOT, and writes nothing."""
    from redis.exceptions import ClusterCrossSlotError

    from server.emq import registry

    conn = cluster_conn
    keys = [keyspace.job_key(Q, "JOBp"), keyspace.dependencies_key(Q, "JOBp"), keyspace.queue_key(Q, "pending"),
            keyspace.job_key(MAIL, "JOBm")]
    node = conn.get_node_from_key(keys[0])
    sha = await conn.execute_command("SCRIPT", "LOAD", registry.script_source("enqueue_flow"), target_nodes=node)
    with pytest.raises(ClusterCrossSlotError, match="Keys in request don't hash to the same slot"):
        await conn.execute_command("EVALSHA", sha, len(keys), *keys, "JOBp", "p", "1", "JOBm", "m", target_nodes=node)
    assert sum([await conn.exists(k) for k in keys]) == 0
