"""Ask the class: one question, at one step of its widget's tour, put to every learner.

What can be asked is each question open where a widget's tour presses its button next, so the whole
class answers from one same state: found by playing each tour once in a scratch sandbox, the first
time a class page needs it, and kept for the process's life. The step is rebuilt as a deep link does
(`goto`) where the class acts; in a demo or together the instructor then presses once for the class
(`press`) and every vote is judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

import msgspec
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import Response

from server.emq.script import Call
from server.lifecycle import reaper
from server.live import events
from server.sandboxes import answers, learners, progress, rooms
from server.web import bodies, guards
from server.web.errors import FAULTS
from server.web.services import services
from server.web.views.instructor import done, for_class
from server.widgets import questions, reader, runner
from server.widgets.base import GotoBody, Widget
from server.widgets.flow import plural
from server.widgets.turn import Actor

REBUILDS_AT_ONCE = 8  # learners' widgets rebuilt side by side
_FOUND: list[Askable] = []
_LOCK = asyncio.Lock()


@dataclass(frozen=True)
class Askable:
    widget: str
    question: str
    legend: str
    step: int
    step_label: str
    action: str
    label: str  # the action's button, as the widget shows it

    @property
    def value(self) -> str:
        return f"{self.widget}|{self.question}|{self.step}"


async def askable(lab: runner.Lab) -> list[Askable]:
    """Every askable (question, step), found once (Valkey away: none yet, found on a later call)."""
    async with _LOCK:
        if not _FOUND:
            with contextlib.suppress(RedisError, OSError):
                _FOUND.extend(await _play_all(lab))
    return list(_FOUND)


async def _play_all(lab: runner.Lab) -> list[Askable]:
    sandbox = "sask" + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(7))
    try:
        return [found for widget in lab.catalog.widgets.values() if lab.catalog.asked(widget)
                for found in await _play(lab, widget, sandbox)]
    finally:
        with contextlib.suppress(RedisError, OSError):
            await reaper.delete(lab.conn, lab.catalog, sandbox)


async def _play(lab: runner.Lab, widget: Widget, sandbox: str) -> list[Askable]:
    """The widget's tour from its landing: the question open before each step's first press."""
    actor, declared = Actor(sandbox, sandbox, records=False), lab.catalog.asked(widget)
    found: list[Askable] = []
    await runner.act(lab, widget, actor, "reset", widget.actions["reset"].body())
    for step, entry in enumerate(widget.tour):
        slug = entry.replay[0][0] if entry.replay else ""
        now = await reader.read(lab.conn, widget, sandbox)
        question = next((q for q in questions.offered(widget, declared, now) if q.action == slug), None)
        if question is not None:
            label = widget.tour[step - 1].label if step else "the scenario as it lands"
            found.append(Askable(widget.name, question.id, question.legend, step, label, slug, widget.label(slug)))
        for action, raw in entry.replay:
            await runner.act(lab, widget, actor, action, msgspec.convert(raw, widget.actions[action].body))
    return found


class AskBody(msgspec.Struct, forbid_unknown_fields=True):
    widget: str = ""
    question: str = ""
    step: int = 0
    pick: str = ""  # the class page's select: "<widget>|<question>|<step>"


async def lookup(request: Request, value: str) -> Askable | None:
    """The askable whose `value` ("<widget>|<question>|<step>") this is, if the course still has it."""
    return next((found for found in await askable(services(request).lab) if found.value == value), None)


async def rebuild(request: Request, room: rooms.Room, widget: Widget, step: int) -> list[str]:
    """The step rebuilt where the class acts; the learners whose sandbox could not be, in words."""
    lab, conn = services(request).lab, services(request).conn
    targets = await learners.learner_ids(conn, room.code) if room.mode == "own" else [room.stage]
    gate, failed = asyncio.Semaphore(REBUILDS_AT_ONCE), []

    async def one(sandbox: str) -> None:
        async with gate:
            try:
                await runner.act(lab, widget, Actor(sandbox, sandbox, by="instructor", records=False), "goto",
                                 GotoBody(step=step))
            except FAULTS as exc:  # one learner's trouble is said, the others are rebuilt
                failed.append(f"{await learners.name_of(conn, sandbox) or sandbox} ({exc})")

    await asyncio.gather(*(one(s) for s in targets))
    return failed


async def announce(request: Request, room: rooms.Room, data: dict[str, Any]) -> None:
    """A `room` event to every page of the class, and the class page woken."""
    conn = services(request).conn
    await events.publish(conn, "room", await rooms.audience(conn, room), {"code": room.code, **data})
    await answers.tell(conn, room.code, str(data.get("action", "")))


def dive_of(request: Request, widget: str) -> str | None:
    return next((d.path for d in services(request).course.dives if widget in d.widgets), None)


async def put(request: Request, room: rooms.Room, found: Askable, round: int = 1) -> Response:
    conn, settings = services(request).conn, services(request).settings
    ask = rooms.Ask(found.widget, found.question, found.step, round)
    await answers.clear_votes(conn, room.code)
    failed = await rebuild(request, room, services(request).catalog.widgets[found.widget], found.step)
    await rooms.set_ask(conn, room.code, ask, settings.room_ttl)
    text = f"Your instructor asks the class: {found.legend}" + (" (second round)" if ask.round == 2 else "")
    await announce(request, room, {"action": "goto", "page": dive_of(request, found.widget), "widget": found.widget,
                                   "ask": True, "text": text})
    said = f"Asked class {room.code}, round {ask.round}: {found.legend} (at step {found.step}, {found.step_label})."
    if failed:
        said += f" Not rebuilt for: {'; '.join(failed)}."
    return done(request, said, {"ask": ask, "failed": failed}, room=room)


async def current(request: Request, room: rooms.Room) -> tuple[Askable, rooms.Ask]:
    """The question asked in the class, and how it is asked (its round, whether revealed)."""
    ask = room.ask
    if ask is None:
        raise guards.Refused(409, "no question is asked in this class now: Ask the class first")
    if (found := await lookup(request, f"{ask.widget}|{ask.question}|{ask.step}")) is None:
        raise guards.Refused(409, "the asked question is no longer in the course: ask another")
    return found, ask


@for_class
async def ask(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, AskBody)
    found = await lookup(request, body.pick or f"{body.widget}|{body.question}|{body.step}")
    if found is None:
        raise bodies.BadBody(400, "that question cannot be asked at that step: pick one the class page lists")
    return await put(request, room, found)


@for_class
async def second_round(request: Request, room: rooms.Room) -> Response:
    return await put(request, room, (await current(request, room))[0], round=2)


@for_class
async def reveal(request: Request, room: rooms.Room) -> Response:
    found, ask = await current(request, room)
    conn = services(request).conn
    await rooms.set_ask(conn, room.code, replace(ask, revealed=True), services(request).settings.room_ttl)
    if ask.veils(room.mode):
        # the verdicts own sandboxes kept until Reveal, counted now in each learner's progress (the
        # press counted none of them: no one had seen whether they were right)
        given, _ = await answers.read(conn, room.code)
        now_ms, ttl = int(time.time() * 1000), services(request).lab.ttl
        await reader.pipelined(conn, [
            progress.record_call(g.learner, progress.Step(g.widget, right=g.right, verdict=g.text), ttl, now_ms)
            for g in given if g.mode == room.mode and g.round == ask.round
            and (g.widget, g.question, g.step) == (ask.widget, ask.question, ask.step)])
    await announce(request, room, {"action": "reveal", "widget": found.widget})
    return done(request, f"Revealed to class {room.code}: how the class answered {found.legend}", room=room)


@for_class
async def end(request: Request, room: rooms.Room) -> Response:
    await rooms.set_ask(services(request).conn, room.code, None, services(request).settings.room_ttl)
    await answers.clear_votes(services(request).conn, room.code)
    await announce(request, room, {"action": "ask-ended"})
    return done(request, f"Class {room.code} is asked nothing now; the answers stay counted.", room=room)


@for_class
async def press(request: Request, room: rooms.Room) -> Response:
    """Demo or together: the button pressed once, every vote judged against what Valkey returned."""
    found, ask = await current(request, room)
    if room.mode == "own":
        raise guards.Refused(409, "in own sandboxes each learner presses in their own widget")
    lab, conn = services(request).lab, services(request).conn
    widget = lab.catalog.widgets[found.widget]
    sandbox = room.stage
    before = await reader.read(conn, widget, sandbox)
    question = next((q for q in questions.offered(widget, lab.catalog.asked(widget), before)
                     if q.id == found.question and q.action == found.action), None)
    if question is None:
        raise guards.Refused(409, "the question is not open in the class's sandbox now: ask the class again")
    action = widget.actions[found.action]
    actor = Actor(sandbox, sandbox, by="instructor", records=room.mode == "demo")  # a demo's host is the instructor
    acted = await runner.act(lab, widget, actor, found.action, msgspec.convert({}, action.body))
    if not questions.ran(str(acted.outcome.get("kind"))):  # a press that did nothing judges no vote
        return done(request, f"Pressed {action.label} for class {room.code}: {acted.outcome['text']} "
                             "Nothing ran, so no vote was judged; the votes stay in.", room=room)
    now = await reader.read(conn, widget, sandbox)
    votes = await answers.votes(conn, room.code, ask.round)
    calls: list[Call] = []
    for learner, value in votes.items():
        verdict = questions.judge(widget, question, value, now, before)
        calls.append(answers.answer_command(room.code, learner, widget.name, question.id, verdict.answer,
                                            verdict.right, ask.round, found.step, feedback=verdict.feedback,
                                            mode=room.mode, text=verdict.text))
    await reader.pipelined(conn, calls)
    await answers.clear_votes(conn, room.code)
    await announce(request, room, {"action": "pressed", "widget": found.widget})
    return done(request, f"Pressed {action.label} for class {room.code}: {acted.outcome['text']} "
                         f"{plural(len(votes), 'vote')} judged.", room=room)
