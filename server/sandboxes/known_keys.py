"""One sandbox's keys, found from the names they are known by, never by a scan.

A sandbox's keys are of two kinds, and both are named without looking at
any other sandbox's:

* its widgets' queues, `<sandbox>.<widget part>` (the course knows the
  widgets): each is cleared by `queue_keys.lua` in its `clear` mode, which
  finds the queue's keys on the queue's own slot (the grammar's keys, the
  rows of every id a state set holds or the widget knows of, and the names
  the queue's index lists, e.g. what a console wrote), with the widget's lab
  state and index; its action lock is named beside them;
* its own `lab:{<sandbox>}:…` keys, all in the sandbox's slot: the meta and
  progress hashes, the rate counters of the windows still alive, and one
  console transcript per visitor that typed in it (`transcript.visitors_key`).

So removing or resetting one sandbox sends the same commands whether the
keyspace holds one sandbox or thousands. The site-wide index of sandboxes
that may hold keys (`admission.HELD_KEY`, written by admission) is how the
reaper finds a sandbox whose registry entry is gone.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from server.console import transcript
from server.emq.wire import Conn, as_text
from server.sandboxes import admission
from server.sandboxes.sandbox import SANDBOX_RE
from server.valkey import scripts
from server.web import limits
from server.widgets import WIDGETS, snapshot
from server.widgets.base import Context, Outcome, Widget

# (queue, the job ids whose rows the widget knows of) for each of a widget's queues
Queues = list[tuple[str, list[str]]]


def meta_key(sandbox: str) -> str:
    return f"lab:{{{sandbox}}}:meta"


def progress_key(sandbox: str) -> str:
    return f"lab:{{{sandbox}}}:progress"


def survives_reset(sandbox: str) -> set[str]:
    """What a reset leaves: who the learner is (name, last page) and how far they got."""
    return {meta_key(sandbox), progress_key(sandbox)}


def checked(sandbox: str) -> str:
    if not SANDBOX_RE.match(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    return sandbox


def rate_names(sandbox: str, now: float) -> list[str]:
    """The sandbox's rate counters that may still exist (each lives two windows)."""
    return list(dict.fromkeys(limits.rate_key(sandbox, now - k * limits.RATE_WINDOW) for k in range(3)))


def own_names(sandbox: str, visitors: list[str], now: float) -> list[str]:
    """The sandbox's own lab keys a reset removes (meta and progress stay)."""
    consoles = [transcript.transcript_key(sandbox, v) for v in dict.fromkeys([sandbox, *visitors])]
    return [*rate_names(sandbox, now), transcript.visitors_key(sandbox), *consoles]


async def visitors(conn: Conn, sandbox: str) -> list[str]:
    """Who typed in the sandbox's console (each has a transcript)."""
    return [as_text(v) for v in await conn.smembers(transcript.visitors_key(sandbox))]


async def widget_queues(conn: Conn, sandbox: str) -> list[tuple[Widget, Queues]]:
    """Every widget with its queues in `sandbox` and the ids its rows are known by.

    `ids_after` is the widget's own answer (the ledger adds a learner's batch,
    read from its lab state), so a held parent in no state set is found too.
    """
    widgets = list(WIDGETS.values())
    found = await asyncio.gather(*(w.ids_after(Context(conn, sandbox)) for w in widgets))
    return [(w, [(q, ids[q]) for q in w.queues(Context(conn, sandbox))]) for w, ids in zip(widgets, found)]


async def delete(conn: Conn, sandbox: str) -> int:
    """Remove every key of `sandbox` (the reaper, an expired room): the number removed."""
    checked(sandbox)
    plan, who = await asyncio.gather(widget_queues(conn, sandbox), visitors(conn, sandbox))
    calls: list[Any] = []
    async with conn.pipeline(transaction=False) as pipe:
        for _, queues in plan:
            for queue, ids in queues:
                call = snapshot.call(queue, ids, "clear")
                call[0].queue(pipe, call[1], call[2])
                pipe.delete(snapshot.lock_key(queue))
                calls += [call, None]
        # one DEL: every lab:{<sandbox>}:… key shares the sandbox's slot
        pipe.delete(*survives_reset(sandbox), *own_names(sandbox, who, time.time()))
        pipe.zrem(admission.HELD_KEY, sandbox)
        replies = await scripts.execute(conn, pipe, calls)
    return sum(int(r) for r in replies[:-1])


async def held_by_widgets(conn: Conn, plan: list[tuple[Widget, Queues]]) -> tuple[dict[str, bool], dict[str, int]]:
    """One read of every widget queue: per widget, whether it landed and how
    many keys it holds (its queues' keys, its lab state and index)."""
    calls: list[Any] = []
    async with conn.pipeline(transaction=False) as pipe:
        for _, queues in plan:
            for queue, ids in queues:
                call = snapshot.call(queue, ids)
                call[0].queue(pipe, call[1], call[2])
                pipe.exists(snapshot.index_key(queue))
                calls += [call, None]
        replies = iter(await scripts.execute(conn, pipe, calls))
    landed: dict[str, bool] = {}
    counts: dict[str, int] = {}
    for widget, queues in plan:
        for i, (queue, _) in enumerate(queues):
            state, view = snapshot.decode(conn, queue, next(replies))
            if i == 0:
                landed[widget.name] = state.get("landed") == "1"
            counts[widget.name] = counts.get(widget.name, 0) + len(view.keys) + bool(state) + int(next(replies))
    return landed, counts


async def reset(conn: Conn, sandbox: str, outcome: Outcome) -> int:
    """Reset `sandbox` as each widget's own Reset does (under the widget's
    lock: kept choices stay, the scenario lands again, `outcome` says who
    reset it), and remove its other keys but meta and progress. The number of
    keys it held before (meta and progress not counted)."""
    checked(sandbox)
    plan, who = await asyncio.gather(widget_queues(conn, sandbox), visitors(conn, sandbox))
    landed, counts = await held_by_widgets(conn, plan)

    async def one(widget: Widget) -> None:
        # one context each: an action's context carries its own state
        ctx = Context(conn, sandbox, by="instructor")
        if landed[widget.name]:
            await widget.reset_locked(ctx, outcome)
        elif counts[widget.name]:
            await widget.clear(ctx)  # a landing cut short: nothing to land again until it shows

    await asyncio.gather(*(one(w) for w, _ in plan))
    return sum(counts.values()) + int(await conn.delete(*own_names(sandbox, who, time.time())))
