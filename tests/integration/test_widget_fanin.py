"""The fan-in widget against a real Valkey: claim apart from complete, and each
guard inside `complete` answering for real (a stale token, a late completion
after a lapsed lease, the not-in-active branch)."""

from __future__ import annotations

import pytest

from server.emq import jobs, keyspace, results
from server.widgets.base import BadInput, Context
from server.widgets.fanin import CHILDREN, PARENT, FanIn

from .conftest import act, members, row

SANDBOX = "s0123456789"
Q = f"{SANDBOX}.fanin"


@pytest.fixture
async def fanin(conn) -> tuple[FanIn, Context]:
    widget, ctx = FanIn(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def test_claim_puts_the_child_in_active_with_its_token_and_lease_and_counts_nothing(fanin, conn) -> None:
    widget, ctx = fanin
    outcome = await act(widget, ctx, "claim", {})
    assert outcome.detail == {"child": "JOBchild1", "token": 1}
    assert await members(conn, Q, "active") == ["JOBchild1"]
    assert (await row(conn, Q, "JOBchild1"))["attempts"] == "1"
    assert await results.dependencies(conn, Q, PARENT) == 3
    picture = (await widget.snapshot(ctx))["picture"]
    assert [a["id"] for a in picture["active"]] == ["JOBchild1"] and picture["active"][0]["token"] == "1"
    assert picture["active"][0]["deadline_ms"] == await conn.zscore(keyspace.queue_key(Q, "active"), "JOBchild1")


async def test_complete_child_completes_the_claimed_child_the_learner_picks(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "claim", {})
    await act(widget, ctx, "claim", {})
    outcome = await act(widget, ctx, "complete-child", {"child": "JOBchild2"})
    assert outcome.detail["child"] == "JOBchild2" and outcome.detail["dependencies"] == 2
    assert await members(conn, Q, "active") == ["JOBchild1"]
    assert await results.children_values(conn, Q, PARENT) == {"JOBchild2": "result of JOBchild2"}
    with pytest.raises(BadInput, match="'child'"):
        await act(widget, ctx, "complete-child", {"child": "JOBparent"})


async def test_complete_child_with_nothing_claimed_claims_one_first_and_counts_it(fanin, conn) -> None:
    widget, ctx = fanin
    outcome = await act(widget, ctx, "complete-child", {})
    assert ":dependencies fell from 3 to 2; the parent is still held" in outcome.text
    assert await results.dependencies(conn, Q, PARENT) == 2


async def test_a_stale_token_while_the_row_exists_answers_emqstale_and_writes_nothing(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "claim", {})
    before = {k: await conn.dump(k) async for k in conn.scan_iter(match=f"emq:{{{Q}}}:*")}
    outcome = await act(widget, ctx, "stale", {})
    after = {k: await conn.dump(k) async for k in conn.scan_iter(match=f"emq:{{{Q}}}:*")}
    assert outcome.detail["answer"] == "EMQSTALE complete token mismatch"
    assert before == after and outcome.detail["changed"] == []
    assert "no key changed" in outcome.text


async def test_a_late_completion_after_the_lease_lapsed_and_a_second_claim_is_refused(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "claim", {})
    lapsed = await act(widget, ctx, "lapse", {})
    assert lapsed.detail["requeued"] == ["JOBchild1"]
    assert "JOBchild1" in await members(conn, Q, "pending")
    assert (await row(conn, Q, "JOBchild1"))["state"] == "pending"
    again = await act(widget, ctx, "claim", {})
    assert again.detail == {"child": "JOBchild1", "token": 2}
    late = await act(widget, ctx, "late", {})
    assert late.detail["answer"] == "EMQSTALE complete token mismatch" and late.detail["changed"] == []
    assert await results.dependencies(conn, Q, PARENT) == 3
    done = await act(widget, ctx, "complete-child", {})
    assert done.detail["token"] == 2 and done.detail["dependencies"] == 2


async def test_a_late_completion_of_a_child_no_longer_in_active_answers_1_and_skips_the_fan_in(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "claim", {})
    await act(widget, ctx, "lapse", {})
    late = await act(widget, ctx, "late", {})
    assert late.detail["answer"] == "1"
    assert await results.dependencies(conn, Q, PARENT) == 3
    assert await results.children_values(conn, Q, PARENT) == {}
    assert not await conn.exists(keyspace.job_key(Q, "JOBchild1"))
    assert "job:JOBchild1 gone" in late.detail["changed"]


async def test_claim_never_takes_the_released_parent(fanin, conn) -> None:
    widget, ctx = fanin
    for _ in CHILDREN:
        await act(widget, ctx, "complete-child", {})
    assert await members(conn, Q, "pending") == [PARENT]
    assert (await act(widget, ctx, "claim", {})).kind == "info"
    assert (await act(widget, ctx, "complete-child", {})).kind == "info"
    assert await members(conn, Q, "pending") == [PARENT]
    assert (await row(conn, Q, PARENT))["state"] == "pending"


async def test_the_tour_reaches_every_branch_and_ends_with_the_skipped_fan_in(fanin, conn) -> None:
    widget, ctx = fanin
    outcome = await act(widget, ctx, "goto", {"step": len(widget.tour)})
    assert "skipped the fan-in" in outcome.text
    assert await results.dependencies(conn, Q, PARENT) == 1
    assert set(await results.children_values(conn, Q, PARENT)) == {"JOBchild1", "JOBchild2"}


async def test_requeue_lapsed_leaves_a_lease_that_has_not_run_out_where_it_is(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "claim", {})
    assert await jobs.requeue_lapsed(conn, Q) == []
    assert await members(conn, Q, "active") == ["JOBchild1"]
    assert (await row(conn, Q, "JOBchild1"))["state"] == "active"
