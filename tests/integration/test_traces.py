"""Static traces and the shared tour machinery against a real Valkey."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
import redis.asyncio as aioredis

from server.valkey.process import free_port
from server.widgets import WIDGETS, traces
from server.widgets.base import BadInput, Context

from .conftest import act, all_keys

SANDBOX = "s0123456789"


async def test_every_widget_records_one_row_per_recorded_step_and_leaves_no_key(conn) -> None:
    found = await traces.record_all(conn)
    assert set(found) == set(WIDGETS)
    for name, trace in found.items():
        widget = WIDGETS[name]
        steps = widget.trace_tour or widget.tour
        assert [r.step for r in trace.rows] == list(range(len(steps) + 1)), name
    assert not [k for k in await all_keys(conn) if k.startswith(("emq:", "lab:"))]


async def test_the_fan_in_trace_reads_the_counter_from_valkey_at_each_step(conn) -> None:
    trace = await traces.record(conn, WIDGETS["fanin"], "strace00000")
    readouts = [r.readout for r in trace.rows]
    assert ":dependencies = 3" in readouts[0]
    counter = [c for c in trace.rows[1].changes if c.key == "job:JOBparent:dependencies"]
    assert counter == [traces.KeyChange("job:JOBparent:dependencies", "changed", "3 → 2")]
    assert trace.rows[2].changes == () and "did not move" in trace.rows[2].outcome
    assert "in active: JOBchild2 (token 1)" in readouts[3]
    # the stale token: refused by the fence, and the two readings found no key changed
    assert "EMQSTALE complete token mismatch" in trace.rows[4].outcome and trace.rows[4].changes == ()
    assert "EMQSTALE" in trace.rows[7].outcome and trace.rows[7].changes == ()
    assert "skipped the fan-in" in trace.rows[11].outcome and ":dependencies = 1" in readouts[11]
    assert "strace00000" not in " ".join(r.outcome for r in trace.rows)


async def test_the_stepper_trace_ends_in_the_emqkind_refusal(conn) -> None:
    trace = await traces.record(conn, WIDGETS["enqueue-stepper"], "strace00000")
    last = trace.rows[-1]
    assert last.kind == "refused" and "EMQKIND job id must be JOB-namespaced" in last.outcome
    assert last.keys == 0


@pytest.mark.parametrize("name", list(WIDGETS))
async def test_goto_takes_a_step_of_the_tour_and_refuses_anything_else(conn, name) -> None:
    widget, ctx = WIDGETS[name], Context(conn, SANDBOX)
    await widget.show(ctx)
    last = len(widget.tour)
    outcome = await act(widget, ctx, "goto", {"step": last})
    # the stepper keeps one numbering, the script's moves: it names the button instead
    opened = "Rebuilt on Valkey from the link, up to" if name == "enqueue-stepper" else f"Step {last} of {last}"
    assert outcome.text.startswith(opened)
    for body in ({}, {"step": -1}, {"step": "1"}, {"step": True}, {"move": 1}, {"flow": 1}):
        with pytest.raises(BadInput):
            await act(widget, ctx, "goto", body)


@pytest.mark.parametrize("name", list(WIDGETS))
async def test_goto_past_the_tour_opens_the_last_step_and_says_how_many_there_are(conn, name) -> None:
    widget, ctx = WIDGETS[name], Context(conn, SANDBOX)
    await widget.show(ctx)
    last = len(widget.tour)
    outcome = await act(widget, ctx, "goto", {"step": last + 1})
    said = f"This tour has {last} steps, so the link to step {last + 1} opened the last one. "
    assert outcome.text.startswith(said)
    exact = await act(widget, ctx, "goto", {"step": last})
    assert outcome.text.removeprefix(said) == exact.text


async def test_goto_replays_the_same_state_as_the_clicks_do(conn) -> None:
    widget = WIDGETS["results"]
    clicked, jumped = Context(conn, "s000000000a"), Context(conn, "s000000000b")
    await widget.show(clicked)
    for slug in widget.tour[:3]:
        await act(widget, clicked, slug, {})
    await act(widget, jumped, "goto", {"step": 3})
    a, b = await widget.snapshot(clicked), await widget.snapshot(jumped)
    assert a["readout"] == b["readout"]
    assert a["picture"]["children"] == b["picture"]["children"]


async def test_without_valkey_the_traces_arrive_later_and_cached_pages_are_dropped(valkey) -> None:
    port = free_port()  # nothing listens here yet
    app = SimpleNamespace(state=SimpleNamespace(
        conn=aioredis.Redis.from_url(f"redis://127.0.0.1:{port}/0", decode_responses=True, socket_connect_timeout=0.2),
        page_bodies={"/flows/parent-and-children": "rendered without traces"},
    ))
    saved = dict(traces.RECORDED)
    traces.RECORDED.clear()
    try:
        await traces.start(app)
        assert app.state.trace_task is not None and not traces.RECORDED
        await app.state.conn.aclose()
        app.state.conn = aioredis.Redis.from_url(valkey.url, decode_responses=True)  # Valkey is back
        for _ in range(100):
            if traces.RECORDED:
                break
            await asyncio.sleep(0.05)
        assert set(traces.RECORDED) == set(WIDGETS)
        assert app.state.page_bodies == {}
        await traces.stop(app)
    finally:
        await app.state.conn.aclose()
        traces.RECORDED.clear()
        traces.RECORDED.update(saved)
