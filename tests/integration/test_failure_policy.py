"""fail(): retry below the cap; at the cap the child's policy decides the parent."""

from __future__ import annotations

import pytest

from server.emq import flows, jobs, keyspace, pump, results

from .conftest import claim_all, flow, members, row, where

Q = "orders"
OTHER = "mail"


def child(job_id: str, **flags: object) -> dict[str, object]:
    return {"id": job_id, **flags}


@pytest.mark.parametrize(
    ("flags", "token"),
    [
        ({}, "fp"),
        ({"fail_parent_on_failure": True}, "fp"),
        ({"ignore_dependency_on_failure": True}, "id"),
        ({"fail_parent_on_failure": True, "ignore_dependency_on_failure": True}, "id"),
        ({"fail_parent_on_failure": False, "ignore_dependency_on_failure": False}, "fp"),
    ],
)
async def test_policy_token_is_written_on_each_child(conn, flags, token) -> None:
    assert flows.policy_token(flags) == token
    await flows.add(conn, Q, flow("JOBp", child("JOBa", **flags)))
    await flows.add(conn, Q, flow("JOBq", child("JOBb", queue=OTHER, **flags)))
    assert (await row(conn, Q, "JOBa"))["parent_policy"] == token
    assert (await row(conn, OTHER, "JOBb"))["parent_policy"] == token


async def test_fail_below_the_cap_schedules_a_retry(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    tokens = await claim_all(conn, Q)
    assert await jobs.fail(conn, Q, "JOBa", tokens["JOBa"], "boom", 3, backoff_ms=5000) == "scheduled"
    assert await where(conn, Q, "JOBa") == ["schedule"]
    got = await row(conn, Q, "JOBa")
    assert got["state"] == "scheduled" and got["last_error"] == "boom"
    assert await results.dependencies(conn, Q, "JOBp") == 2
    assert (await row(conn, Q, "JOBp"))["state"] == "awaiting_children"


async def test_fp_at_the_cap_fails_the_parent_for_good(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb", "JOBc"))
    tokens = await claim_all(conn, Q)
    await jobs.complete(conn, Q, "JOBa", tokens["JOBa"])
    assert await jobs.fail(conn, Q, "JOBb", tokens["JOBb"], "boom", 1) == "dead"
    assert (await row(conn, Q, "JOBb"))["state"] == "dead"
    parent = await row(conn, Q, "JOBp")
    assert parent["state"] == "failed" and parent["failed_child"] == "JOBb" and parent["error"] == "boom"
    assert set(await members(conn, Q, "dead")) == {"JOBb", "JOBp"}
    # the last sibling completes: the counter may reach its end, the parent stays failed
    await jobs.complete(conn, Q, "JOBc", tokens["JOBc"])
    assert (await row(conn, Q, "JOBp"))["state"] == "failed"
    assert await where(conn, Q, "JOBp") == ["dead"]
    assert await jobs.claim(conn, Q) is None


async def test_id_at_the_cap_lets_the_parent_proceed(conn) -> None:
    policy = {"ignore_dependency_on_failure": True}
    await flows.add(conn, Q, flow("JOBp", child("JOBa", **policy), child("JOBb", **policy), "JOBc"))
    tokens = await claim_all(conn, Q)
    assert await jobs.fail(conn, Q, "JOBa", tokens["JOBa"], "e-a", 1) == "dead"
    assert await jobs.fail(conn, Q, "JOBb", tokens["JOBb"], "e-b", 1) == "dead"
    assert await results.dependencies(conn, Q, "JOBp") == 1
    assert await where(conn, Q, "JOBp") == []
    await jobs.complete(conn, Q, "JOBc", tokens["JOBc"], result="c")
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert await results.ignored_failures(conn, Q, "JOBp") == {"JOBa": "e-a", "JOBb": "e-b"}
    assert await results.children_values(conn, Q, "JOBp") == {"JOBc": "c"}


async def test_an_unknown_policy_token_fails_the_parent(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    await conn.hset(keyspace.job_key(Q, "JOBa"), "parent_policy", "whatever")
    tokens = await claim_all(conn, Q)
    assert await jobs.fail(conn, Q, "JOBa", tokens["JOBa"], "boom", 1) == "dead"
    assert (await row(conn, Q, "JOBp"))["state"] == "failed"


async def test_the_policy_is_not_read_on_completion(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", child("JOBa", ignore_dependency_on_failure=True), "JOBb"))
    tokens = await claim_all(conn, Q)
    for job_id, token in tokens.items():
        await jobs.complete(conn, Q, job_id, token)
    assert await results.ignored_failures(conn, Q, "JOBp") == {}
    assert await members(conn, Q, "pending") == ["JOBp"]


async def test_cross_queue_fp_failure_goes_through_the_outbox(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", child("JOBa", queue=OTHER), child("JOBb", queue=OTHER)))
    tokens = await claim_all(conn, OTHER)
    assert await jobs.fail(conn, OTHER, "JOBa", tokens["JOBa"], "smtp down", 1) == "dead"
    # nothing reaches the parent's slot until the Pump delivers
    assert (await row(conn, Q, "JOBp"))["state"] == "awaiting_children"
    entries = [pump.decode_entry(e) for e in await pump.read_all(conn, OTHER)]
    assert entries == [pump.OutboxEntry("failed", "JOBa", OTHER, "smtp down", "JOBp", Q, "fp")]
    assert await pump.deliver_flow_completions(conn, OTHER, 10) == 1
    parent = await row(conn, Q, "JOBp")
    assert parent["state"] == "failed" and parent["failed_child"] == "JOBa"
    assert await where(conn, Q, "JOBp") == ["dead"]
    await jobs.complete(conn, OTHER, "JOBb", tokens["JOBb"])
    assert await pump.deliver_flow_completions(conn, OTHER, 10) == 1
    assert (await row(conn, Q, "JOBp"))["state"] == "failed"
    assert await jobs.claim(conn, Q) is None


async def test_cross_queue_id_failure_goes_through_the_outbox(conn) -> None:
    await flows.add(
        conn, Q, flow("JOBp", child("JOBa", queue=OTHER, ignore_dependency_on_failure=True), child("JOBb", queue=OTHER))
    )
    tokens = await claim_all(conn, OTHER)
    await jobs.fail(conn, OTHER, "JOBa", tokens["JOBa"], "smtp down", 1)
    await jobs.complete(conn, OTHER, "JOBb", tokens["JOBb"], result="sent")
    assert await results.dependencies(conn, Q, "JOBp") == 2
    assert await pump.deliver_flow_completions(conn, OTHER, 10) == 2
    assert await results.ignored_failures(conn, Q, "JOBp") == {"JOBa": "smtp down"}
    assert await results.children_values(conn, Q, "JOBp") == {"JOBb": "sent"}
    assert await members(conn, Q, "pending") == ["JOBp"]
    # a re-delivered failure entry changes nothing
    await conn.rpush(
        keyspace.outbox_key(OTHER),
        pump.encode_entry(pump.OutboxEntry("failed", "JOBa", OTHER, "again", "JOBp", Q, "id")),
    )
    assert await pump.deliver_flow_completions(conn, OTHER, 10) == 1
    assert await results.ignored_failures(conn, Q, "JOBp") == {"JOBa": "smtp down"}
    assert await results.dependencies(conn, Q, "JOBp") == 0
