"""The @enqueue_flow stepper against a real Valkey: each Next move runs the
script's prefix through that move, Previous goes back one, the non-JOB id
is refused at the gate with nothing written, and a deep link rebuilds the
same keys clicking would."""

from __future__ import annotations

import pytest

from server.emq import keyspace
from server.widgets import WIDGETS
from server.widgets.base import BadInput, Context
from server.widgets.enqueue_stepper import CHILDREN, PARENT, EnqueueStepper

from .conftest import act, members, row

SANDBOX = "s0123456789"
Q = f"{SANDBOX}.stepper"


@pytest.fixture
async def stepper(conn) -> tuple[EnqueueStepper, Context]:
    widget = WIDGETS["enqueue-stepper"]
    assert isinstance(widget, EnqueueStepper)
    ctx = Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def queue_keys(conn) -> set[str]:
    return {k async for k in conn.scan_iter(match=f"emq:{{{Q}}}:*")}


async def test_it_lands_before_move_one_with_an_empty_queue(stepper, conn) -> None:
    assert await queue_keys(conn) == set()
    assert await conn.hget(f"lab:{{{Q}}}:state", "move") == "0"


async def test_each_next_move_leaves_what_the_script_has_written_by_then(stepper, conn) -> None:
    widget, ctx = stepper
    gate = await act(widget, ctx, "next")
    assert gate.text.startswith("Move 1 of 4, gate every id") and await queue_keys(conn) == set()
    await act(widget, ctx, "next")
    assert set(await members(conn, Q, "pending")) == set(CHILDREN)
    assert await conn.exists(keyspace.job_key(Q, PARENT)) == 0
    await act(widget, ctx, "next")
    assert (await row(conn, Q, PARENT))["state"] == "awaiting_children"
    assert await conn.exists(keyspace.dependencies_key(Q, PARENT)) == 0
    last = await act(widget, ctx, "next")
    assert await conn.get(keyspace.dependencies_key(Q, PARENT)) == "2"
    assert "Valkey now holds 5 keys" in last.text and len(await queue_keys(conn)) == 5
    done = await act(widget, ctx, "next")
    assert done.kind == "info" and len(await queue_keys(conn)) == 5


async def test_previous_move_goes_back_to_the_keys_of_the_move_before(stepper, conn) -> None:
    widget, ctx = stepper
    for _ in range(3):
        await act(widget, ctx, "next")
    at_three = await queue_keys(conn)
    await act(widget, ctx, "next")
    back = await act(widget, ctx, "previous")
    assert back.text.startswith("Move 3 of 4") and await queue_keys(conn) == at_three
    assert await conn.hget(f"lab:{{{Q}}}:state", "move") == "3"


async def test_a_non_job_child_is_refused_at_the_gate_and_the_choice_survives_the_refusal(stepper, conn) -> None:
    widget, ctx = stepper
    await act(widget, ctx, "non-job", {"non_job": True})
    refused = await act(widget, ctx, "next")
    assert refused.kind == "refused" and refused.detail["refused_at"] == 1
    assert "EMQKIND" in refused.text and await queue_keys(conn) == set()
    # the box stays ticked: the whole script, run at once, is refused the same way
    state = await conn.hgetall(f"lab:{{{Q}}}:state")
    assert state["non_job"] == "1" and state["move"] == "0"
    again = await act(widget, ctx, "run-atomically")
    assert again.kind == "refused" and await queue_keys(conn) == set()


async def test_run_atomically_writes_what_the_four_moves_write(stepper, conn) -> None:
    widget, ctx = stepper
    for _ in range(4):
        await act(widget, ctx, "next")
    stepped = {k: await conn.type(k) for k in await queue_keys(conn)}
    await act(widget, ctx, "reset")
    whole = await act(widget, ctx, "run-atomically")
    assert whole.text.startswith("The whole script ran as one call")
    assert {k: await conn.type(k) for k in await queue_keys(conn)} == stepped


async def test_a_deep_link_to_a_move_rebuilds_the_keys_clicking_would(stepper, conn) -> None:
    widget, ctx = stepper
    for _ in range(2):
        await act(widget, ctx, "next")
    clicked = await queue_keys(conn)
    linked = await act(widget, ctx, "goto", {"step": 2})
    assert linked.text.startswith("Rebuilt on Valkey from the link. Move 2 of 4")
    assert await queue_keys(conn) == clicked


async def test_a_non_job_body_that_is_not_true_or_false_is_refused_and_nothing_is_written(stepper, conn) -> None:
    widget, ctx = stepper
    before = await conn.hgetall(f"lab:{{{Q}}}:state")
    for body in ({}, {"non_job": "yes"}):
        with pytest.raises(BadInput):
            await act(widget, ctx, "non-job", body)
    assert await conn.hgetall(f"lab:{{{Q}}}:state") == before
