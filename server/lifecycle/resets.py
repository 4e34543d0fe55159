"""Resetting sandboxes: an instructor's reset, reset-all, a learner's "Start over".

Each landed widget is reset as its own Reset button does it; the console
transcripts go, the learner and their progress stay. One sandbox's failure is
logged and counted, never raised through the others.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from server.console import transcript
from server.emq.wire import Conn, as_text
from server.lifecycle.removal import checked
from server.live import events
from server.sandboxes import admission, keys, rooms
from server.sandboxes.sandbox import SANDBOX_RE, queue_name
from server.widgets import runner
from server.widgets.base import Body
from server.widgets.turn import Actor

log = logging.getLogger("emqlab.lifecycle")

RESETS_AT_ONCE = 8  # sandboxes reset side by side: a class resets in the time of a handful


@dataclass
class Report:
    reset: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # sandbox -> what went wrong, in words


async def reset_sandbox(lab: runner.Lab, sandbox: str, by: str = "instructor") -> None:
    checked(sandbox)
    actor = Actor(sandbox, sandbox, by=by, records=False)  # done to the sandbox, not by its learner
    for widget in lab.catalog.widgets.values():
        landed = await lab.conn.hget(keys.state_key(queue_name(sandbox, widget.queue_parts[0])), "landed")
        if landed == "1":
            await runner.act(lab, widget, actor, "reset", Body())
    await lab.conn.delete(*await transcript.keys_of(lab.conn, sandbox))


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
    found |= set(await rooms.room_sandboxes(conn))
    found |= {as_text(m) for m in await conn.zrange(admission.HELD_KEY, 0, -1)}
    return {s for s in found if SANDBOX_RE.fullmatch(s)}
