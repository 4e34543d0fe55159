"""One action at a time per widget and sandbox: the lock, the first round trip
and the last.

An action costs two round trips of its own, whatever it does in between:

* **begin** (`queue_keys.lua`, mode `begin`): take the widget's lock with a
  lease and read its first queue and lab state. The way in (admission's
  activity record and rate budgets, `server/web/entry.py`) rides in the same
  pipeline. Tabs, class members and Reset queue behind the lock, so any
  interleaving of clicks leaves a state that clicking one at a time reaches.
  A Reset of a one-queue widget takes the lock in mode `reset`: the same
  call removes the widget's keys and writes its lab hash anew.
* **finish** (mode `finish`): the writes the action left for it
  (`closing.py`) go first, then the action's best-effort tail (a :logs DEL on
  the queue's slot goes into the script, the rest beside it); the outcome's
  proof is read, the values its sentence names read and written into it, the
  outcome and kept fields recorded with a new `ver`, the lock released, and
  every queue read for the snapshot the page paints.

"Complete child" and the fan-in's Reset do all their work in those two.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import secrets
from typing import TYPE_CHECKING, Any

from server.emq import keyspace
from server.valkey import scripts
from server.valkey.scripts import Call
from server.widgets import snapshot
from server.widgets.closing import Closing
from server.widgets.context import Context
from server.widgets.outcome import Busy, Outcome, TooManyKeys, encoded

if TYPE_CHECKING:
    from server.widgets.base import Widget

# A lock token only has to differ from any other holder's: a random prefix,
# the process id (a forked worker keeps the prefix) and a counter;
# secrets.token_hex asked the kernel for fresh bytes every action.
_TOKEN_PREFIX = secrets.token_hex(6)
_tokens = itertools.count(1)

LOCK_LEASE_MS = 10_000  # an action that outlives this (a site killed mid-action) lets go
LOCK_WAIT_S = 5.0  # how long an action queues behind another before it gives up


async def begin(widget: Widget, ctx: Context, key_cap: int | None, *, reset: bool = False) -> str:
    """Take the widget's lock (waiting behind another action); land the
    scenario if it has not landed whole. Returns the lock token.

    `reset`: the action is a Reset; a one-queue widget's keys go in the call
    that takes the lock (`ctx.cleared`), none of them read."""
    queues = widget.queues(ctx)
    first = queues[0]
    token = f"{_TOKEN_PREFIX}{os.getpid():x}.{next(_tokens):x}"
    clearing = reset and len(queues) == 1
    if clearing:
        kept = json.dumps(list(widget.kept_on_reset)) if widget.kept_on_reset else ""
        call = snapshot.call(first, (await widget.ids_after(ctx))[first], "reset", token, str(LOCK_LEASE_MS), kept)
    else:
        call = snapshot.call(first, widget.job_ids(first), "begin", token, str(LOCK_LEASE_MS))
    reply = await _way_in_and_lock(widget, ctx, call, token)
    deadline = asyncio.get_running_loop().time() + LOCK_WAIT_S
    while len(reply) <= 1:
        if asyncio.get_running_loop().time() > deadline:
            raise Busy("another action on this widget is still running; try again in a moment")
        await asyncio.sleep(0.005)
        reply = await call[0].run(ctx.conn, call[1], call[2])
    if clearing:
        ctx.cleared = True
        return token
    state, view = snapshot.decode(ctx.conn, first, reply)
    try:
        if state.get("landed") != "1":
            await widget.land_afresh(ctx)
        elif key_cap is not None and int(state.get("keys") or 0) > key_cap:
            raise TooManyKeys(f"this widget holds {state['keys']} keys, more than its cap of {key_cap}: "
                              "press Reset")
        else:
            # what the action starts from, read with the lock (see `Context.start`)
            ctx.start, ctx.start_state, ctx.start_of = view, state, widget.state_key(ctx)
    except BaseException:
        await release(widget, ctx, token)
        raise
    return token


async def _way_in_and_lock(widget: Widget, ctx: Context, call: Call, token: str) -> Any:
    """The first try at the lock, with the way in's scripts in the same
    pipeline; their counts are judged here (a refusal lets the lock go)."""
    way_in, ctx.way_in = ctx.way_in, None
    if way_in is None:
        return await call[0].run(ctx.conn, call[1], call[2])
    calls: list[Call | None] = [None] * len(way_in.commands)
    calls += [*way_in.calls, call]
    try:
        async with ctx.conn.pipeline(transaction=False) as pipe:
            for command in way_in.commands:
                pipe.execute_command(*command)
            for script, keys, args in (c for c in calls if c is not None):
                script.queue(pipe, keys, args)
            replies = await scripts.execute(ctx.conn, pipe, calls)
        ctx.held = way_in.judge(replies[:-1])
    except BaseException:
        # the lock may have been taken in the same round trip: give it back
        await release(widget, ctx, token)
        raise
    return replies[-1]


async def release(widget: Widget, ctx: Context, token: str) -> None:
    """Let go of the lock without recording anything (an action that failed).
    What the action left unsent goes with it: a context used again must not
    send a failed action's writes, or skip a clear its lock never made."""
    ctx.closing, ctx.cleared = None, False
    ctx.tail.clear()
    await snapshot.RELEASE.run(ctx.conn, [snapshot.lock_key(widget.queues(ctx)[0])], [token])


async def run(widget: Widget, ctx: Context, slug: str, body: dict[str, Any], key_cap: int | None,
              perform: Any) -> tuple[Outcome, dict[str, Any]]:
    """One action, start to finish: lock, land if needed, act, then record
    the outcome, release the lock and read the snapshot in one round trip."""
    resetting = slug == "reset" and "predict" not in body  # a refused prediction must find the keys in place
    token = await begin(widget, ctx, None if slug == "reset" else key_cap, reset=resetting)

    async def act() -> Outcome:
        return await (perform(widget, ctx, slug, body) if perform else widget.perform(ctx, slug, body))

    try:
        ctx.closing = Closing()
        outcome = await act()
    except BaseException:
        await release(widget, ctx, token)
        raise
    try:
        snap = await close(widget, ctx, token, record(widget, ctx, slug, outcome), outcome)
        if snap is None:
            # The writes the action left for the finish did not all do what
            # its outcome says, and nothing was recorded: the action runs
            # again, under the same lock, from what Valkey holds now, each
            # write in a round trip of its own (the closing is shut).
            outcome = await act()
            snap = await finish(widget, ctx, token, record(widget, ctx, slug, outcome), outcome)
    except BaseException:
        await release(widget, ctx, token)  # a refused close wrote nothing: let the next action in
        raise
    if outcome.reads:
        # the answer says what Valkey recorded, readings filled in, like every other page
        outcome.settle(snap["outcome"])
    return outcome, snap


def record(widget: Widget, ctx: Context, slug: str, outcome: Outcome) -> str:
    """The outcome as the lab hash keeps it: what, which button, who, from which page."""
    return json.dumps({**outcome.as_json(), "action": slug, "label": widget.label(slug), "by": ctx.by,
                       "tab": ctx.tab})


async def finish(widget: Widget, ctx: Context, token: str, recorded: str,
                 outcome: Outcome | None = None) -> dict[str, Any]:
    """Record the outcome, release the lock and read every queue: one round trip."""
    snap = await close(widget, ctx, token, recorded, outcome)
    if snap is None:  # only writes an action left for the finish carry a proof that can miss
        raise RuntimeError(f"{widget.name}: the outcome's proof found nothing")
    return snap


async def close(widget: Widget, ctx: Context, token: str, recorded: str,
                outcome: Outcome | None = None) -> dict[str, Any] | None:
    """`finish`, the writes the action left for it (`ctx.closing`) sent
    first in the same round trip. None: their proof found nothing, and
    nothing was recorded (the lock is still held)."""
    queues = widget.queues(ctx)
    closing, ctx.closing = ctx.closing, None
    left = closing.batch if closing is not None and closing.batch else None
    proof = closing.proof_json() if closing is not None and left is not None else ""
    drops, rest = _split_tail(ctx.tail, queues[0])
    ctx.tail.clear()
    keep = outcome.keep if outcome else {}
    extras = (json.dumps(encoded(keep)) if keep else "", outcome.readings_json() if outcome else "",
              json.dumps(drops) if drops else "", proof)
    ids = await widget.ids_after(ctx)
    calls: list[Call | None] = []
    async with ctx.conn.pipeline(transaction=False) as pipe:
        if left is not None:
            left.queue(ctx.conn, pipe)
        for command in rest:
            pipe.execute_command(*command)
            calls.append(None)
        for i, queue in enumerate(queues):
            call = (snapshot.call(queue, ids[queue], "finish", token, recorded, *extras)
                    if i == 0 else snapshot.call(queue, ids[queue]))
            call[0].queue(pipe, call[1], call[2])
            calls.append(call)
        replies = await scripts.execute(ctx.conn, pipe, calls, answered=len(left) if left else 0)
    if left is not None:
        await left.load_missing(ctx.conn, replies[:len(left)])
    finished = replies[len(replies) - len(queues):]
    if len(finished[0]) <= 1:
        return None
    return widget.decode(ctx, finished)


def _split_tail(tail: list[tuple[Any, ...]], queue: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The tail's DELs of keys on `queue`'s slot (the finish script deletes
    them itself) and every other command (sent beside it)."""
    home = keyspace.base(queue)
    drops: list[str] = []
    rest: list[tuple[Any, ...]] = []
    for command in tail:
        if len(command) == 2 and command[0] == "DEL" and str(command[1]).startswith(home):
            drops.append(str(command[1]))
        else:
            rest.append(command)
    return drops, rest


async def word(ctx: Context, queue: str, outcome: Outcome) -> None:
    """Fill in an outcome's readings without recording it (a replayed step)."""
    if not outcome.reads:
        return
    script, keys, args = snapshot.call(queue, [], "word", "", json.dumps(outcome.as_json()),
                                       "", outcome.readings_json())
    outcome.settle(json.loads(await script.run(ctx.conn, keys, args)))
