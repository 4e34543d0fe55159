"""Cross-queue flows: parent first, fail-closed, released through the Pump."""

from __future__ import annotations

import pytest

from server.emq import errors, flows, jobs, keyspace, pump, results

from .conftest import claim_all, flow, members, row, where

Q, MAIL, BILL = "orders", "mail", "billing"


def spread(parent: str = "JOBp") -> dict[str, object]:
    return flow(parent, {"id": "JOBm", "queue": MAIL}, {"id": "JOBb", "queue": BILL}, "JOBo")


async def test_cross_queue_add_holds_the_parent_and_lands_each_child_on_its_slot(conn) -> None:
    assert await flows.add(conn, Q, spread()) == ("JOBp", ["JOBm", "JOBb", "JOBo"])
    assert await row(conn, Q, "JOBp") == {"state": "awaiting_children", "attempts": "0", "payload": "p-JOBp"}
    assert await results.dependencies(conn, Q, "JOBp") == 3
    assert await where(conn, Q, "JOBp") == []
    mail_child = await row(conn, MAIL, "JOBm")
    assert mail_child["parent"] == "JOBp" and mail_child["parent_queue"] == Q
    assert mail_child["parent_policy"] == "fp"
    own = await row(conn, Q, "JOBo")
    assert own["parent"] == "JOBp" and "parent_queue" not in own
    assert await members(conn, MAIL, "pending") == ["JOBm"]
    assert await members(conn, BILL, "pending") == ["JOBb"]
    assert await members(conn, Q, "pending") == ["JOBo"]


async def test_parent_released_once_only_after_the_pump_delivered_everything(conn, backend) -> None:
    if backend == "cluster":
        # The delivery from `billing` really crosses nodes: the parent's row
        # and the billing outbox live on two different primaries.
        here = conn.get_node_from_key(keyspace.job_key(Q, "JOBp")).name
        there = conn.get_node_from_key(keyspace.outbox_key(BILL)).name
        assert here != there, f"orders and billing both on {here}: the run would not cross nodes"
    await flows.add(conn, Q, spread())
    for queue in (MAIL, BILL, Q):
        for job_id, token in (await claim_all(conn, queue)).items():
            await jobs.complete(conn, queue, job_id, token, result=f"r-{job_id}")
    # the same-queue child counted directly; the other two wait in outboxes
    assert await results.dependencies(conn, Q, "JOBp") == 2
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 1
    assert await conn.llen(keyspace.outbox_key(BILL)) == 1
    assert await where(conn, Q, "JOBp") == []
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 1
    assert await results.dependencies(conn, Q, "JOBp") == 1
    assert await where(conn, Q, "JOBp") == []
    assert await pump.deliver_flow_completions(conn, BILL, 10) == 1
    assert await where(conn, Q, "JOBp") == ["pending"]
    assert await results.children_values(conn, Q, "JOBp") == {
        "JOBm": "r-JOBm", "JOBb": "r-JOBb", "JOBo": "r-JOBo",
    }
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 0
    # a crash-replayed entry is a harmless duplicate: still released once
    entry = pump.OutboxEntry("completed", "JOBm", MAIL, "r-JOBm", "JOBp", Q, "fp")
    await conn.rpush(keyspace.outbox_key(MAIL), pump.encode_entry(entry))
    report = await pump.deliver_page(conn, MAIL, await pump.read_page(conn, MAIL, 10))
    assert report == pump.DeliveryReport(delivered=1, duplicates=1, blocked=None)
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert (await row(conn, Q, "JOBp"))["state"] == "pending"


def stalled(second: str) -> dict[str, object]:
    return flow("JOBp", {"id": "JOBm", "queue": MAIL}, {"id": second, "queue": BILL}, {"id": "JOBz", "queue": MAIL})


async def test_a_refused_child_stops_the_walk_and_leaves_the_parent_held(conn) -> None:
    with pytest.raises(errors.KindRefused, match="EMQKIND job id must be JOB-namespaced"):
        await flows.add(conn, Q, stalled("TASKb"))
    assert (await row(conn, Q, "JOBp"))["state"] == "awaiting_children"
    assert await results.dependencies(conn, Q, "JOBp") == 3
    assert await where(conn, Q, "JOBp") == []
    assert await members(conn, MAIL, "pending") == ["JOBm"]  # the first child landed
    assert await conn.exists(keyspace.job_key(BILL, "TASKb")) == 0
    assert await conn.exists(keyspace.job_key(MAIL, "JOBz")) == 0  # the walk stopped
    assert await jobs.claim(conn, MAIL) == ("JOBm", 1)


async def test_retry_by_id_completes_the_add_and_releases_once(conn) -> None:
    with pytest.raises(errors.KindRefused):
        await flows.add(conn, Q, stalled("TASKb"))
    assert await flows.add(conn, Q, stalled("JOBb")) == ("JOBp", ["JOBm", "JOBb", "JOBz"])
    assert await results.dependencies(conn, Q, "JOBp") == 3  # kept, not reset
    assert await members(conn, MAIL, "pending") == ["JOBm", "JOBz"]
    assert (await row(conn, BILL, "JOBb"))["parent_policy"] == "fp"
    for queue in (MAIL, BILL):
        for job_id, token in (await claim_all(conn, queue)).items():
            await jobs.complete(conn, queue, job_id, token)
        await pump.deliver_flow_completions(conn, queue, 10)
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert await results.dependencies(conn, Q, "JOBp") == 0


async def test_retry_after_some_children_completed_still_releases_exactly_once(conn) -> None:
    with pytest.raises(errors.KindRefused):
        await flows.add(conn, Q, stalled("TASKb"))
    # the landed child runs to completion before anyone retries; its entry waits
    token = (await claim_all(conn, MAIL))["JOBm"]
    await jobs.complete(conn, MAIL, "JOBm", token)
    assert await conn.exists(keyspace.job_key(MAIL, "JOBm")) == 0
    await flows.add(conn, Q, stalled("JOBb"))
    # JOBm was not landed again: its note is on its way to the parent
    assert await conn.exists(keyspace.job_key(MAIL, "JOBm")) == 0
    assert await members(conn, MAIL, "pending") == ["JOBz"]
    await pump.deliver_flow_completions(conn, MAIL, 10)
    # and a retry after the delivery finds it in :processed instead
    await flows.add(conn, Q, stalled("JOBb"))
    assert await conn.exists(keyspace.job_key(MAIL, "JOBm")) == 0
    assert await results.dependencies(conn, Q, "JOBp") == 2
    for queue in (MAIL, BILL):
        for job_id, tok in (await claim_all(conn, queue)).items():
            await jobs.complete(conn, queue, job_id, tok)
        await pump.deliver_flow_completions(conn, queue, 10)
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert await results.dependencies(conn, Q, "JOBp") == 0
    assert set(await results.children_values(conn, Q, "JOBp")) == {"JOBm", "JOBb", "JOBz"}


async def test_a_retry_after_release_is_refused_by_state(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", {"id": "JOBm", "queue": MAIL}))
    token = (await claim_all(conn, MAIL))["JOBm"]
    await jobs.complete(conn, MAIL, "JOBm", token)
    await pump.deliver_flow_completions(conn, MAIL, 10)
    with pytest.raises(errors.StateRefused, match="EMQSTATE flow parent exists and is not held"):
        await flows.add(conn, Q, flow("JOBp", {"id": "JOBm", "queue": MAIL}))
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert await conn.exists(keyspace.job_key(MAIL, "JOBm")) == 0


async def test_cross_queue_path_on_a_bytes_client(raw_conn) -> None:
    conn = raw_conn
    policy = {"ignore_dependency_on_failure": True}
    await flows.add(conn, Q, flow("JOBp", {"id": "JOBm", "queue": MAIL}, {"id": "JOBn", "queue": MAIL, **policy}))
    first = await jobs.claim(conn, MAIL)
    second = await jobs.claim(conn, MAIL)
    assert first == ("JOBm", 1) and second == ("JOBn", 1)
    await jobs.complete(conn, MAIL, "JOBm", 1, result="sent")
    assert await jobs.fail(conn, MAIL, "JOBn", 1, "bounced", 1) == "dead"
    assert [pump.decode_entry(e).kind for e in await pump.read_all(conn, MAIL)] == ["completed", "failed"]
    assert await pump.deliver_flow_completions_aged(conn, MAIL, 10, 1) == 2
    assert await results.children_values(conn, Q, "JOBp") == {"JOBm": "sent"}
    assert await results.ignored_failures(conn, Q, "JOBp") == {"JOBn": "bounced"}
    assert await jobs.claim(conn, Q) == ("JOBp", 1)
