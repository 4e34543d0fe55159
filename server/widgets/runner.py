"""The executor: one action from its lock to its record, and a widget's first showing.

`act` takes the lock and reads (`Turn.take`), lands the scenario if it is
missing, runs the action, judges an answer against a fresh read, and records
it all in one round trip (`Turn.finish`); every page repaints from the stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from redis.exceptions import OutOfMemoryError

from server.emq.script import Call
from server.emq.wire import Conn
from server.sandboxes import admission, answers, progress
from server.widgets import questions, reader
from server.widgets.base import Body, Refused, ResetStillFull, Widget
from server.widgets.questions import Verdict
from server.widgets.snapshot import Catalog, Record, Snapshot
from server.widgets.turn import LOCK_WAIT_S, Actor, Busy, Turn

Admit = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Lab:
    conn: Conn
    catalog: Catalog
    ttl: int = 7200  # the learner's records' lifetime, s
    snapshot_bytes: int = 64 * 1024


class Acted(msgspec.Struct):
    """The answer to the page that acted; every page repaints from the stream."""

    outcome: dict[str, Any]
    ver: int
    progress: progress.WidgetProgress
    verdict: Verdict | None = None


async def show_all(lab: Lab, widgets: Sequence[Widget], sandbox: str) -> dict[str, Snapshot]:
    """A page's widgets read in one round trip: the landed ones' snapshots (`show` lands the others)."""
    found = await reader.snapshots(lab.conn, lab.catalog, widgets, sandbox, lab.snapshot_bytes)
    return {widget.name: snap for widget, (moment, snap) in zip(widgets, found) if moment.landed}


async def show(lab: Lab, widget: Widget, actor: Actor, admit: Admit | None = None) -> Snapshot:
    """The snapshot a page opens with; the first time, the scenario lands under the lock."""
    moment, snap = await reader.snapshot(lab.conn, lab.catalog, widget, actor.sandbox, lab.snapshot_bytes)
    if moment.landed:
        return snap
    if admit is not None:
        await admit()
    deadline = time.monotonic() + LOCK_WAIT_S
    held = Turn(lab.conn, widget, actor, lab.snapshot_bytes)
    while (taken := await held.try_take()) is None:
        # another page is landing it: read until it stands, rather than every page queueing on the lock
        await asyncio.sleep(0.02)
        moment, snap = await reader.snapshot(lab.conn, lab.catalog, widget, actor.sandbox, lab.snapshot_bytes)
        if moment.landed:
            return snap
        if time.monotonic() > deadline:
            raise Busy("the scenario is still landing; the page will show it in a moment")
    if taken.landed:  # another page landed it just before this one took the lock
        await held.release()
    else:
        try:
            await _land(widget, held)
            await widget.first_shown(held)
        except BaseException:
            await held.release()
            raise
        await held.finish("")  # a first showing is not a use: the sandbox stays evictable until an action
    return (await reader.snapshot(lab.conn, lab.catalog, widget, actor.sandbox, lab.snapshot_bytes))[1]


async def act(lab: Lab, widget: Widget, actor: Actor, slug: str, body: Body, admit: Admit | None = None) -> Acted:
    action = widget.actions[slug]
    held = Turn(lab.conn, widget, actor, lab.snapshot_bytes)
    try:
        # a Reset removes a stray lock key (turn.StrayLock): it is the way out the refusal names
        before = await held.take(stray_goes=slug == "reset")
    except OutOfMemoryError:
        if slug != "reset":
            raise
        # Over maxmemory the lock (a write) is refused, deletes are not: a Reset frees the
        # widget's keys first (clear.lua deletes before it writes), then takes the lock.
        await held.clear()
        try:
            before = await held.take(stray_goes=True)
        except OutOfMemoryError as exc:
            raise ResetStillFull from exc
    try:
        if not before.landed and slug != "reset":
            if admit is not None:
                await admit()
            await _land(widget, held)
            before = await held.read()
        problem = before.misfit()
        if problem is not None and slug not in ("reset", "goto"):
            raise Refused(problem)
        question = None  # the open question the answer is for: with none open for it now, the action runs unjudged
        if problem is None and body.predict is not None:
            offered = questions.offered(widget, lab.catalog.asked(widget), before)
            question = next((q for q in offered if q.action == slug and q.id == body.predict.question), None)
        outcome = await action.fn(widget, held, body)
        verdict = None
        if body.predict is not None and not questions.ran(outcome.kind):
            # the press found nothing to act on (a page still showing the question): not judged, not counted
            outcome = msgspec.structs.replace(outcome, text=outcome.text + questions.UNJUDGED)
        elif question is not None and body.predict is not None:
            verdict = questions.judge(widget, question, body.predict.answer, await held.read(), before)
        held.remember(landed="1")  # the scenario stands whole again (an action may have cleared it)
    except BaseException:
        await held.release()
        raise
    asked = actor.ask if verdict and actor.ask and actor.ask[:2] == (widget.name, verdict.question) else None
    # an asked question's verdict waits for Reveal (own sandboxes): the page and the record say only
    # that the answer is in; it is counted in the learner's progress at Reveal
    shown = questions.veiled(verdict, question) if verdict and question and asked and actor.veiled else verdict
    # the outcome as the lab state keeps it: what, which button, who, from which page
    record = Record(text=outcome.text, kind=outcome.kind, detail=dict(outcome.detail), action=slug,
                    label=widget.label(slug), by=actor.by, name=actor.name, tab=actor.tab,
                    reached=list(outcome.reached), verdict=shown)
    step = progress.Step(widget.name, outcome.reached if slug != "goto" else (),
                         shown.right if shown and not shown.hidden else None, shown.text if shown else "")
    now_ms = int(time.time() * 1000)
    calls: list[Call | tuple[Any, ...]] = [admission.touch_call(actor.sandbox, now_ms)]
    if actor.records:
        calls.insert(0, progress.record_call(actor.visitor, step, lab.ttl, now_ms))
    if verdict is not None and actor.room:
        calls.append(answers.answer_command(actor.room, actor.visitor, widget.name, verdict.question,
                                            verdict.answer, verdict.right,
                                            asked[3] if asked else None, asked[2] if asked else None,
                                            feedback=verdict.feedback, mode=actor.mode, text=verdict.text))
    ver, replies = await held.finish(msgspec.json.encode(record).decode(), calls)
    recorded = actor.records and replies and not isinstance(replies[0], Exception)
    fields = progress.fields_of(replies[0]) if recorded else {}
    mine = progress.of_widget(fields, widget.name, [s.id for s in widget.tour])
    return Acted(msgspec.to_builtins(record), int(ver), mine, shown)


async def _land(widget: Widget, held: Turn) -> None:
    """Land the scenario over whatever a half-finished landing left."""
    await held.clear()
    await widget.land(held)
    held.remember(landed="1")
