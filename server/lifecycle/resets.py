"""Resetting sandboxes: an instructor's reset, reset-all, a learner's "Start over".

A sandbox is reset the way each widget's own Reset button does it: through
the executor, under the widget's lock, recorded as the instructor's outcome
(so a learner's open page says who reset it); the learner's kept choices
stay, the scenario lands again. A widget that has not landed yet is only
cleared. The sandbox's console transcripts go; who the learner is and their
progress stay. Every key is named, so the cost does not grow with other
sandboxes, and Reset removes keys whatever types they hold.

One corrupted sandbox never fails another's reset: each sandbox is reset on
its own, and a failure is logged and counted, not raised through the others.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from server.console import transcript
from server.emq.wire import Conn, as_text
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
    """What a reset of several sandboxes did."""

    reset: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # sandbox -> what went wrong, in words


async def reset_sandbox(lab: runner.Lab, sandbox: str, by: str = "instructor") -> None:
    """Reset one sandbox (see the module's docstring)."""
    if not SANDBOX_RE.fullmatch(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    actor = Actor(sandbox, sandbox, by=by, records=False)  # done to the sandbox, not by its learner
    for widget in lab.catalog.widgets.values():
        landed = await lab.conn.hget(keys.state_key(queue_name(sandbox, widget.queue_parts[0])), "landed")
        if landed == "1":
            await runner.act(lab, widget, actor, "reset", Body())
    visitors = [as_text(v) for v in await lab.conn.smembers(transcript.visitors_key(sandbox))]
    await lab.conn.delete(transcript.visitors_key(sandbox),
                          *(transcript.transcript_key(sandbox, v) for v in dict.fromkeys([sandbox, *visitors])))


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
    await events.publish_reset(lab.conn, None if sandboxes is None else report.reset, by)
    return report


async def every_sandbox(conn: Conn) -> set[str]:
    """Every sandbox that may hold keys: registered, a class's, or ever admitted."""
    found = {as_text(m) for m in await conn.zrange(keys.REGISTRY_KEY, 0, -1)}
    found |= set(await rooms.room_sandboxes(conn))
    found |= {as_text(m) for m in await conn.zrange(admission.HELD_KEY, 0, -1)}
    return {s for s in found if SANDBOX_RE.fullmatch(s)}
