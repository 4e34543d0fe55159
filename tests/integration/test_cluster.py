"""The library on a RedisCluster client (a two-node Valkey cluster).

`orders` lives on one node, `mail` on the other. Valkey refuses a script
whose declared keys span two slots, and one that reaches a key the node does
not serve, so this run proves every script keeps to its hashtag and that
cross-queue work crosses slots only through the host and the Pump.
"""

from __future__ import annotations

import pytest
from redis.exceptions import ResponseError

from server.emq import errors, flows, jobs, keyspace, pump, results

from .conftest import flow

Q, MAIL = "orders", "mail"


async def test_the_cluster_refuses_a_two_slot_script(cluster_conn) -> None:
    assert keyspace.queue_slot(Q) != keyspace.queue_slot(MAIL)
    two_slots = cluster_conn.register_script("return redis.call('EXISTS', KEYS[1], KEYS[2])")
    with pytest.raises(Exception):
        await two_slots(keys=[keyspace.queue_key(Q, "pending"), keyspace.queue_key(MAIL, "pending")])
    stray = cluster_conn.register_script("return redis.call('EXISTS', ARGV[1])")
    with pytest.raises(ResponseError):
        await stray(keys=[keyspace.queue_key(Q, "pending")], args=[keyspace.queue_key(MAIL, "pending")])


async def test_flows_run_end_to_end_on_a_cluster(cluster_conn) -> None:
    conn = cluster_conn
    assert await flows.add(conn, Q, flow("JOBs", "JOBs1", "JOBs2")) == ("JOBs", ["JOBs1", "JOBs2"])
    await flows.add(conn, Q, flow("JOBx", {"id": "JOBx1", "queue": MAIL}, "JOBx2"))
    await flows.add(conn, Q, flow("JOBt", {"id": "JOBt1", "queue": MAIL, "children": [{"id": "JOBt11", "payload": "z"}]}))
    with pytest.raises(errors.KindRefused):
        await flows.add(conn, Q, flow("JOBk", "TASKk1"))
    landed = await flows.add_bulk_pipelined(conn, Q, [flow("JOBb", "JOBb1"), flow("JOBc", "TASKc1")])
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
