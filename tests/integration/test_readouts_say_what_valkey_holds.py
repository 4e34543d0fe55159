"""Issue 11's defects, each pinned by a test named after it: the readouts and
outcomes say what Valkey holds, read from the snapshot, never a count of
their own."""

from __future__ import annotations

import re

from server.widgets import WIDGETS
from server.widgets.base import Context

from .conftest import act

SANDBOX = "s00readout1"


async def landed(conn, name: str) -> tuple:
    widget, ctx = WIDGETS[name], Context(conn, SANDBOX)
    await widget.show(ctx)
    await act(widget, ctx, "reset", {})
    return widget, ctx


async def test_entries_delivered_but_not_trimmed_are_shown_as_applied_not_as_waiting(conn) -> None:
    widget, ctx = await landed(conn, "outbox")
    for _ in range(3):
        await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "crash-before-trim", {})
    snap = await widget.snapshot(ctx)
    readout = snap["readout"]
    assert readout.startswith("3 of 3 completions delivered to the parent's slot, 0 entries waiting in outboxes")
    assert "3 entries delivered, not yet trimmed" in readout
    entries = [e for q in snap["picture"]["queues"] for e in q["outbox"]]
    assert [e["state"] for e in entries] == ["applied"] * 3
    assert all(e["text"].endswith("delivered, not yet trimmed") for e in entries)
    children = [c for q in snap["picture"]["queues"] for c in q["children"]]
    assert {c["counted"] for c in children} == {"processed"}
    assert not any("entry in the outbox" in c["where"] for c in children)


async def test_a_non_job_id_run_atomically_is_drawn_refused_at_the_gate_with_no_move_done(conn) -> None:
    widget, ctx = await landed(conn, "enqueue-stepper")
    await act(widget, ctx, "non-job", {"non_job": True})
    outcome = await act(widget, ctx, "run-atomically", {})
    picture = (await widget.snapshot(ctx))["picture"]
    assert outcome.kind == "refused" and "move 1" in outcome.text and "EMQKIND" in outcome.text
    assert picture["refused_at"] == 1 and picture["move"] == 0
    assert (await widget.snapshot(ctx))["key_count"] == 0
    assert "Move 4" not in outcome.text


async def test_a_retired_child_card_says_no_row_and_where_it_was_counted_never_completed(conn) -> None:
    widget, ctx = await landed(conn, "results")
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "fail-child", {})
    children = (await widget.snapshot(ctx))["picture"]["children"]
    retired = [c for c in children if c["state"] is None]
    assert [c["counted"] for c in retired] == ["processed"]
    assert "counted in the parent's :processed" in retired[0]["where"]
    assert all(c["state"] != "completed" for c in children)


async def test_the_aged_pump_says_it_moves_a_blocked_head_on_the_tick_after_the_bound(conn) -> None:
    widget, ctx = await landed(conn, "outbox")
    await act(widget, ctx, "add-poison", {})
    await act(widget, ctx, "complete-child", {})
    said = [(await act(widget, ctx, "aged-pump-tick", {})).text for _ in range(3)]
    assert "blocked for 1 tick and moves it aside on tick 3" in said[0]
    assert "blocked for 2 ticks and moves it aside on tick 3" in said[1]
    assert "moved to flow:outbox:poison on this one" in said[2]
    assert not any(re.search(r"\b1 (completions|entries|ticks)\b", s) for s in said)


async def test_a_redelivery_is_refused_by_the_guard_in_the_aged_tick_as_in_the_plain_tick(conn) -> None:
    widget, ctx = await landed(conn, "outbox")
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "crash-before-trim", {})
    plain = await act(widget, ctx, "pump-tick", {})
    assert "the guard refused it (duplicate)" in plain.text
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "crash-before-trim", {})
    aged = await act(widget, ctx, "aged-pump-tick", {})
    assert aged.detail["applied"] == 0 and aged.detail["duplicates"] == 1
    assert "guard refused it (duplicate)" in aged.text


async def test_a_second_death_under_fp_does_not_say_the_parent_was_failed_again(conn) -> None:
    widget, ctx = await landed(conn, "failure-policy")
    first = await act(widget, ctx, "fail-child", {})
    second = await act(widget, ctx, "fail-child", {})
    assert "the parent was failed" in first.text
    assert "the parent was failed" not in second.text
    assert "not held any more (failed)" in second.text
