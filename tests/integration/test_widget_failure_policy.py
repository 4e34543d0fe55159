"""The failure-policy widget driven directly against a real Valkey: the policy
token is read from the child rows, and each arm leaves its own keys behind."""

from __future__ import annotations

import pytest

from server.emq import keyspace, results
from server.widgets.base import BadInput, Context
from server.widgets.failure_policy import CHILDREN, ERROR, PARENT, FailurePolicy

from .conftest import act, members, row

SANDBOX = "s0123456789"
Q = f"{SANDBOX}.failure-policy"


@pytest.fixture
async def landed(conn):
    widget, ctx = FailurePolicy(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def test_the_flow_lands_with_fail_the_parent_by_default(landed, conn) -> None:
    widget, ctx = landed
    assert [(await row(conn, Q, c))["parent_policy"] for c in CHILDREN] == ["fp"] * 3
    snap = await widget.snapshot(ctx)
    assert snap["picture"]["policy"] == "fp" and snap["picture"]["tokens"] == ["fp"]
    assert "parent_policy fp (fail the parent)" in snap["readout"]


async def test_under_fp_a_death_at_the_cap_fails_the_parent_and_nothing_releases_it(landed, conn) -> None:
    widget, ctx = landed
    outcome = await act(widget, ctx, "fail-child", {})
    assert outcome.detail["outcome"] == "dead"
    assert set(await members(conn, Q, "dead")) == {"JOBchild1", PARENT}
    parent = await row(conn, Q, PARENT)
    assert parent["state"] == "failed" and parent["failed_child"] == "JOBchild1" and parent["error"] == ERROR
    assert await results.dependencies(conn, Q, PARENT) == 3
    assert "the parent was failed" in outcome.text
    for _ in range(2):
        await act(widget, ctx, "complete-child", {})
    assert (await row(conn, Q, PARENT))["state"] == "failed"
    assert PARENT not in await members(conn, Q, "pending")
    assert await results.ignored_failures(conn, Q, PARENT) == {}
    readout = (await widget.snapshot(ctx))["readout"]
    assert "nothing will release it" in readout and "2 completed" in readout


async def test_under_id_the_error_is_ignored_and_the_parent_is_released_at_zero(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "policy", {"policy": "id"})
    assert [(await row(conn, Q, c))["parent_policy"] for c in CHILDREN] == ["id"] * 3
    outcome = await act(widget, ctx, "fail-child", {})
    assert "fell from 3 to 2" in outcome.text
    assert await results.ignored_failures(conn, Q, PARENT) == {"JOBchild1": ERROR}
    assert (await row(conn, Q, PARENT))["state"] == "awaiting_children"
    await act(widget, ctx, "complete-child", {})
    last = await act(widget, ctx, "fail-child", {})
    assert await results.dependencies(conn, Q, PARENT) == 0
    assert (await row(conn, Q, PARENT))["state"] == "pending"
    assert await members(conn, Q, "pending") == [PARENT]
    assert await results.ignored_failures(conn, Q, PARENT) == {"JOBchild1": ERROR, "JOBchild3": ERROR}
    assert "released" in last.text
    # the released parent is never claimed as if it were a child
    assert (await act(widget, ctx, "fail-child", {})).kind == "info"
    assert await members(conn, Q, "pending") == [PARENT]


async def test_the_policy_choice_survives_reset_and_relands_the_flow(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "fail-child", {})
    await act(widget, ctx, "policy", {"policy": "id"})
    assert (await row(conn, Q, PARENT))["state"] == "awaiting_children"
    assert await members(conn, Q, "dead") == []
    await act(widget, ctx, "reset", {})
    assert (await widget.state(ctx))["policy"] == "id"
    assert (await row(conn, Q, "JOBchild1"))["parent_policy"] == "id"
    assert (await widget.snapshot(ctx))["picture"]["policy"] == "id"


@pytest.mark.parametrize("body", [{}, {"policy": "both"}, {"policy": 1}, {"policy": None}])
async def test_a_bad_policy_is_refused_and_nothing_is_written(landed, conn, body) -> None:
    widget, ctx = landed
    await act(widget, ctx, "fail-child", {})
    with pytest.raises(BadInput):
        await act(widget, ctx, "policy", body)
    assert (await row(conn, Q, PARENT))["state"] == "failed"
    assert (await row(conn, Q, "JOBchild2"))["parent_policy"] == "fp"


async def test_the_step_deep_link_replays_the_tour_under_the_chosen_policy(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "policy", {"policy": "id"})
    outcome = await act(widget, ctx, "goto", {"step": 3})
    assert outcome.text.startswith(f"Step 3 of {len(widget.tour)}")
    assert (await row(conn, Q, PARENT))["state"] == "pending"
    with pytest.raises(BadInput):
        await act(widget, ctx, "goto", {"step": -1})
    assert (await row(conn, Q, PARENT))["state"] == "pending"
    assert await conn.exists(keyspace.ignored_key(Q, PARENT))


# -- the branches issue 17 made reachable ----------------------------------------

MAIL = f"{SANDBOX}.failure-policy.mail"


async def test_a_failure_with_attempts_left_schedules_the_child_and_leaves_the_parent_alone(landed, conn) -> None:
    widget, ctx = landed
    before = {k: await conn.dump(k) for k in (keyspace.job_key(Q, PARENT), keyspace.dependencies_key(Q, PARENT))}
    outcome = await act(widget, ctx, "fail-retry", {})
    assert outcome.detail["outcome"] == "scheduled"
    assert await members(conn, Q, "schedule") == ["JOBchild1"]
    assert (await row(conn, Q, "JOBchild1"))["state"] == "scheduled"
    after = {k: await conn.dump(k) for k in before}
    assert before == after and await members(conn, Q, "dead") == []
    assert not await conn.exists(keyspace.ignored_key(Q, PARENT))
    assert "does not read the policy token" in outcome.text


async def test_the_mixed_flow_gives_each_child_its_own_token_and_each_resolves_as_the_design_says(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "mixed", {})
    assert [(await row(conn, Q, c))["parent_policy"] for c in CHILDREN] == ["fp", "id", "skip"]
    assert (await act(widget, ctx, "fail-retry", {})).detail["outcome"] == "scheduled"
    both = await act(widget, ctx, "fail-child", {})  # JOBchild2 named both flags: id
    assert both.detail["child"] == "JOBchild2" and "fell from 3 to 2" in both.text
    assert await results.ignored_failures(conn, Q, PARENT) == {"JOBchild2": ERROR}
    unknown = await act(widget, ctx, "fail-child", {})  # JOBchild3's 'skip' resolves to fp
    assert unknown.detail["child"] == "JOBchild3" and "resolves to fp" in unknown.text
    parent = await row(conn, Q, PARENT)
    assert parent["state"] == "failed" and parent["failed_child"] == "JOBchild3"
    assert set(await members(conn, Q, "dead")) == {"JOBchild2", "JOBchild3", PARENT}
    # the variant is the learner's: Reset lands the mixed flow again
    await act(widget, ctx, "reset", {})
    assert (await row(conn, Q, "JOBchild3"))["parent_policy"] == "skip"


async def test_a_cross_queue_death_waits_in_the_outbox_and_the_pump_fails_the_parent_on_its_slot(landed, conn) -> None:
    widget, ctx = landed
    died = await act(widget, ctx, "fail-remote", {})
    assert died.detail == {"child": "JOBremote", "outcome": "dead", "outbox": 1, "parent_state": "awaiting_children"}
    assert (await row(conn, Q, "JOBlinked"))["state"] == "awaiting_children"
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 1
    pumped = await act(widget, ctx, "pump", {})
    assert pumped.detail["delivered"] == 1
    assert (await row(conn, Q, "JOBlinked"))["state"] == "failed"
    assert "JOBlinked" in await members(conn, Q, "dead")
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 0


async def test_under_id_the_pump_records_the_cross_queue_error_and_releases_the_parent(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "policy", {"policy": "id"})
    assert (await row(conn, MAIL, "JOBremote"))["parent_policy"] == "id"
    await act(widget, ctx, "fail-remote", {})
    await act(widget, ctx, "pump", {})
    assert await results.ignored_failures(conn, Q, "JOBlinked") == {"JOBremote": ERROR}
    assert (await row(conn, Q, "JOBlinked"))["state"] == "pending"
    assert "JOBlinked" in await members(conn, Q, "pending")


async def test_choosing_a_policy_after_the_mixed_flow_lands_the_uniform_flow_again(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "mixed", {})
    await act(widget, ctx, "policy", {"policy": "fp"})
    assert [(await row(conn, Q, c))["parent_policy"] for c in CHILDREN] == ["fp"] * 3
    assert (await widget.snapshot(ctx))["picture"]["variant"] == "uniform"
