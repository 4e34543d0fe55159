"""An action's writes sent in its closing round trip, and what happens when
their proof finds nothing (`server/widgets/closing.py`).

"Complete child" sends `claim` and `complete` ahead of the finish, and the
fan-in's Reset its `enqueue_flow`: the outcome is written before Valkey has
answered them, so the finish records it only when the effect it states is
there. These tests make that proof miss for real (a write outside the lock
between the lock's read and the click's scripts, SCRIPT FLUSH) and check the
keys: the action runs again and leaves what clicking once would leave.
"""

from __future__ import annotations

import json
from typing import Any

from bench.wire import WireCount
from server.emq import keyspace, results
from server.widgets import snapshot, turn
from server.widgets.base import Context
from server.widgets.closing import Closing
from server.widgets.fanin import CHILDREN, PARENT, FanIn
from server.widgets.fanin_reading import Peek
from server.widgets.outcome import Outcome

from .conftest import act, members, row

SANDBOX = "s0123456789"
Q = f"{SANDBOX}.fanin"


async def landed(conn: Any) -> tuple[FanIn, Context]:
    widget, ctx = FanIn(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def recorded(conn: Any) -> dict[str, Any]:
    return json.loads(await conn.hget(snapshot.state_key(Q), "outcome"))


class MeddledFanIn(FanIn):
    """The fan-in, with one write from outside its lock (as a console could
    send) landing right after the action read the queue: JOBchild3 jumps
    to the head of pending, so the lock's read names the wrong child."""

    meddled = False

    async def peek(self, ctx: Context) -> Peek:
        peek = await super().peek(ctx)
        if not self.meddled:
            self.meddled = True
            await ctx.conn.zadd(keyspace.queue_key(Q, "pending"), {"JOBchild3": -1})
        return peek


async def test_a_wrong_guess_in_the_closing_round_trip_completes_the_child_claim_really_took(conn) -> None:
    widget, ctx = MeddledFanIn(), Context(conn, SANDBOX)
    await widget.show(ctx)
    outcome, snap = await widget.run(ctx, "complete-child", {})
    # claim took JOBchild3; the completion of JOBchild1 was fenced off and
    # wrote nothing; the action ran again and completed the child it holds
    assert outcome.text.startswith("Completed JOBchild3 with token 1: :dependencies fell from 3 to 2")
    assert await results.children_values(conn, Q, PARENT) == {"JOBchild3": "result of JOBchild3"}
    assert await results.dependencies(conn, Q, PARENT) == 2
    assert await members(conn, Q, "active") == []
    assert await members(conn, Q, "pending") == ["JOBchild1", "JOBchild2"]
    assert (await row(conn, Q, "JOBchild1"))["attempts"] == "0"
    # one outcome recorded, the one the answer carries, and the lock let go
    assert (await recorded(conn))["text"] == outcome.text == snap["outcome"]["text"]
    assert await conn.exists(snapshot.lock_key(Q)) == 0


async def test_complete_child_after_a_script_flush_counts_exactly_one_child(conn) -> None:
    widget, ctx = await landed(conn)
    await conn.script_flush()
    outcome, snap = await widget.run(ctx, "complete-child", {})
    assert outcome.text.startswith("Completed JOBchild1 with token 1: :dependencies fell from 3 to 2")
    assert await results.children_values(conn, Q, PARENT) == {"JOBchild1": "result of JOBchild1"}
    assert await members(conn, Q, "pending") == ["JOBchild2", "JOBchild3"]
    assert await members(conn, Q, "active") == []
    assert await conn.exists(keyspace.job_key(Q, "JOBchild1")) == 0
    assert snap["picture"]["parent"]["dependencies"] == 2 and (await recorded(conn))["text"] == outcome.text
    assert await conn.exists(snapshot.lock_key(Q)) == 0
    # the scripts are known again: the next click takes the two-round-trip path and counts one more
    await act(widget, ctx, "complete-child", {})
    assert await results.dependencies(conn, Q, PARENT) == 1


async def _fan_in_keys(conn: Any) -> dict[str, Any]:
    """Every key of the fan-in's queue (the lab hash aside), type and value."""
    found: dict[str, Any] = {}
    async for name in conn.scan_iter(match=f"emq:{{{Q}}}:*"):
        kind = await conn.type(name)
        found[name] = (kind, await conn.hgetall(name) if kind == "hash" else
                       await conn.zrange(name, 0, -1, withscores=True) if kind == "zset" else await conn.get(name))
    return found


async def test_a_reset_after_a_script_flush_lands_the_flow_once_with_no_stray_rows(conn) -> None:
    widget, ctx = await landed(conn)
    fresh = await _fan_in_keys(conn)
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "claim", {})
    await conn.script_flush()
    # enqueue_flow is refused (NOSCRIPT) while the policies' HSETs beside it
    # make bare child rows: the proof (the parent's row) misses, and the Reset
    # clears and lands again
    outcome, snap = await widget.run(ctx, "reset", {})
    assert outcome.text.startswith("Reset")
    assert await _fan_in_keys(conn) == fresh
    for child in CHILDREN:
        assert (await row(conn, Q, child))["parent_policy"] == "fp"
    assert snap["landed"] and (await recorded(conn))["action"] == "reset"
    assert await conn.exists(snapshot.lock_key(Q)) == 0


async def test_an_instructors_reset_takes_the_buttons_two_round_trips_and_lands_the_same_keys(conn) -> None:
    widget, ctx = await landed(conn)
    fresh = await _fan_in_keys(conn)
    await act(widget, ctx, "complete-child", {})
    said = Outcome("Reset by your instructor.", "info")
    with WireCount(Q) as wire:
        await widget.reset_locked(Context(conn, SANDBOX, by="instructor"), said)
    # the lock's call clears; the close lands the flow and its policies, records and lets go
    assert wire.round_trips == 2, wire.as_json()
    assert await _fan_in_keys(conn) == fresh
    mine = await recorded(conn)
    assert mine["by"] == "instructor" and mine["text"] == said.text and mine["tab"] == ""
    assert await conn.exists(snapshot.lock_key(Q)) == 0


async def test_an_instructors_reset_after_a_script_flush_lands_the_flow_once(conn) -> None:
    widget, ctx = await landed(conn)
    fresh = await _fan_in_keys(conn)
    await act(widget, ctx, "complete-child", {})
    await conn.script_flush()
    await widget.reset_locked(Context(conn, SANDBOX, by="instructor"), Outcome("Reset by your instructor.", "info"))
    assert await _fan_in_keys(conn) == fresh
    for child in CHILDREN:
        assert (await row(conn, Q, child))["parent_policy"] == "fp"
    assert await conn.exists(snapshot.lock_key(Q)) == 0


async def test_the_reset_lock_removes_the_keys_and_keeps_only_the_named_choices(conn) -> None:
    widget, _ctx = await landed(conn)
    await conn.hset(snapshot.state_key(Q), mapping={"policy": "id", "last": "{}"})
    await conn.sadd(snapshot.index_key(Q), f"emq:{{{Q}}}:typed")
    await conn.set(f"emq:{{{Q}}}:typed", "x")
    script, keys, args = snapshot.call(Q, widget.job_ids(Q), "reset", "tok", "10000", '["policy", "variant"]')
    state, found = await script.run(conn, keys, args)
    assert dict(zip(state[::2], state[1::2])) == {"landed": "1", "policy": "id"} and found == []
    left = sorted([k async for k in conn.scan_iter(match=f"*{{{Q}}}*")])
    assert left == sorted([snapshot.lock_key(Q), snapshot.state_key(Q)])
    assert await conn.get(snapshot.lock_key(Q)) == "tok"
    # another action's lock: nothing is removed
    await conn.set(keyspace.job_key(Q, "JOBparent"), "still here")
    assert await script.run(conn, keys, [*args[:2], "other", *args[3:]]) == [0]
    assert await conn.get(keyspace.job_key(Q, "JOBparent")) == "still here"


async def test_a_finish_whose_proof_finds_nothing_writes_nothing_and_keeps_the_lock(conn) -> None:
    widget, _ctx = await landed(conn)
    await conn.set(snapshot.lock_key(Q), "tok")
    before = {k: await conn.dump(k) async for k in conn.scan_iter(match=f"*{{{Q}}}*")}
    proof = json.dumps([["HGET", keyspace.processed_key(Q, PARENT), "JOBchild1"]])
    script, keys, args = snapshot.call(Q, widget.job_ids(Q), "finish", "tok", '{"text": "x"}', '{"a": 1}', "",
                                       json.dumps([keyspace.logs_key(Q, "JOBchild1")]), proof)
    assert await script.run(conn, keys, args) == [0]
    assert {k: await conn.dump(k) async for k in conn.scan_iter(match=f"*{{{Q}}}*")} == before


async def test_a_failed_action_leaves_nothing_for_the_next_one_on_the_same_context(conn) -> None:
    widget, ctx = await landed(conn)
    token = await turn.begin(widget, ctx, None)
    ctx.closing = Closing()
    ctx.closing.batch.command("SET", f"emq:{{{Q}}}:stray", "x")
    ctx.cleared, ctx.tail[:] = True, [("SET", f"emq:{{{Q}}}:stray", "x")]
    await turn.release(widget, ctx, token)  # as turn.run lets go after an action raised
    assert ctx.closing is None and not ctx.cleared and ctx.tail == []
    await act(widget, ctx, "complete-child", {})  # the next action sends only its own writes
    assert await conn.exists(f"emq:{{{Q}}}:stray") == 0
    assert await results.dependencies(conn, Q, PARENT) == 2
