"""Resetting sandboxes: an instructor's reset, reset-all, a learner's "Start over".

Each landed widget is reset as its Reset button does, the others' queues cleared; the
console transcripts go, the learner and progress stay. Over maxmemory (every lock refused)
the queues are cleared by deletes alone. One sandbox's failure never stops the others.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from redis.exceptions import OutOfMemoryError

from server.console import transcript
from server.console.api import queue_lock
from server.emq.script import Call, raise_first
from server.emq.wire import Conn, as_text
from server.lifecycle.reaper import checked
from server.live import events
from server.sandboxes import admission, keys, rooms
from server.sandboxes.sandbox import SANDBOX_RE, queue_name
from server.widgets import runner
from server.widgets.base import Body, Widget
from server.widgets.flow import plural
from server.widgets.reader import pipelined
from server.widgets.turn import Actor, clear_call, unstray_call

log = logging.getLogger("emqlab.lifecycle")

RESETS_AT_ONCE = 8  # sandboxes reset side by side: a class resets in the time of a handful


@dataclass
class Report:
    reset: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # sandbox -> what went wrong, in words

    def words(self, names: dict[str, str] | None = None) -> str:
        """"3 reset" and which failed and why: one broken sandbox never hides the others."""
        failed = [f"{(names or {}).get(s) or s} ({why})" for s, why in sorted(self.failed.items())]
        said = f"{plural(len(self.reset), 'sandbox', 'sandboxes')} reset"
        return said + ("; failed: " + "; ".join(failed) if failed else "")


async def reset_sandbox(lab: runner.Lab, sandbox: str, by: str = "instructor") -> None:
    checked(sandbox)
    actor = Actor(sandbox, sandbox, by=by, records=False)  # done to the sandbox, not by its learner
    try:
        # a lock key no lock wrote would hold every widget's reset below forever; a held lock stays
        raise_first(await pipelined(lab.conn, [unstray_call(w, sandbox) for w in lab.catalog.widgets.values()]))
        for widget in lab.catalog.widgets.values():
            landed = await lab.conn.hget(keys.state_key(queue_name(sandbox, widget.queue_parts[0])), "landed")
            if landed == "1":
                await runner.act(lab, widget, actor, "reset", Body())
            else:  # never shown, yet the console may have written its queues
                await clear_unlanded(lab, widget, actor)
    except Exception as exc:
        if not (isinstance(exc, OutOfMemoryError) or "used memory > 'maxmemory'" in str(exc)):
            raise
        # Over maxmemory the lock (a write) is refused but deletes pass, and `clear.lua` deletes before
        # it writes: every queue is freed in one round trip without it, the learners' kept choices kept;
        # each widget lands again when a page next shows it.
        calls = [call for w in lab.catalog.widgets.values() for call in clear_calls(w, sandbox)]
        raise_first(await pipelined(lab.conn, calls))
    await lab.conn.delete(*await transcript.keys_of(lab.conn, sandbox))


async def clear_unlanded(lab: runner.Lab, widget: Widget, actor: Actor) -> None:
    """Clear a widget's queues under its lock (never while a page lands it), reading nothing
    of them (whatever types they hold); reset it instead if it landed meanwhile."""
    first = widget.queue_parts[0]
    async with queue_lock(lab.conn, actor.sandbox)(first):
        landed = await lab.conn.hget(keys.state_key(queue_name(actor.sandbox, first)), "landed") == "1"
        if not landed:
            raise_first(await pipelined(lab.conn, clear_calls(widget, actor.sandbox)))
    if landed:
        await runner.act(lab, widget, actor, "reset", Body())


def clear_calls(widget: Widget, sandbox: str) -> list[Call]:
    """`clear.lua` over each queue of the widget, the learner's kept choices and `ver` kept."""
    return [clear_call(widget, sandbox, part, ["ver", *widget.kept_on_reset]) for part in widget.queue_parts]


async def reset_sandboxes(lab: runner.Lab, sandboxes: list[str] | None, by: str = "instructor") -> Report:
    """Reset these sandboxes (None: every sandbox the site knows) and tell their pages."""
    targets = sorted(await every_sandbox(lab.conn)) if sandboxes is None else sandboxes
    gate = asyncio.Semaphore(RESETS_AT_ONCE)
    report = Report()

    async def one(sandbox: str) -> None:
        async with gate:
            try:
                await reset_sandbox(lab, sandbox, by)
                report.reset.append(sandbox)
            except Exception as exc:  # noqa: BLE001 - one sandbox's trouble is said, the others reset
                log.warning("reset of sandbox %s failed: %s", sandbox, exc)
                report.failed[sandbox] = str(exc)

    await asyncio.gather(*(one(s) for s in targets))
    await events.publish(lab.conn, "reset", None if sandboxes is None else report.reset, {"by": by})
    return report


async def every_sandbox(conn: Conn) -> set[str]:
    """Every sandbox that may hold keys: registered, a class's, or ever admitted."""
    found = {as_text(m) for m in await conn.zrange(keys.REGISTRY_KEY, 0, -1)}
    found |= await rooms.room_sandboxes(conn)
    found |= {as_text(m) for m in await conn.zrange(admission.HELD_KEY, 0, -1)}
    return {s for s in found if SANDBOX_RE.fullmatch(s)}
