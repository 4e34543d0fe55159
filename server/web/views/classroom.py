"""A class: its page, its live stream, the instructor's controls (modes, bring, resets, Watch, close),
asking it a question, its roster and answers as the pages show them and the instructor takes them away,
and the learner's side: the room page (join with the code and your name, leave) and the class's question.

A mode change or a close is a `room` event to every sandbox a member's page may listen on: the pages
reconnect, resolved afresh by the guards. The class page's stream sends the class whenever it changed:
at once on an answer's event, else on a read every `EVERY` seconds for what no event announces. The
page renders the words and its stream sends the same as JSON (the page reads the same without
JavaScript); verdicts show once revealed, the projector has no names. results.csv and answers.json
are read live while the class is open, and kept as they stood when it closes.

Ask the class: one question, at one step of its widget's tour, put to every learner. What can be asked
is each question open where a widget's tour presses its button next, so the whole class answers from
one same state: found by playing each tour once in a scratch sandbox, the first time a class page needs
it, and kept for the process's life. The step is rebuilt as a deep link does (`goto`) where the class
acts; in a demo or together the instructor then presses once for the class (`press`) and every vote is
judged.

On the room page, unknown codes count as failed attempts of the visitor and of the address, counted
before the code is looked up. An asked question's distribution reaches learners once revealed.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import msgspec
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from server.emq.script import Call
from server.emq.wire import as_dict
from server.lifecycle import reaper, resets
from server.live import events
from server.live.streams import frame
from server.refusal import Refusal
from server.sandboxes import answers, keys, learners, presence, progress, rooms, roster
from server.sandboxes.answers import Counted
from server.sandboxes.rooms import Room
from server.sandboxes.sandbox import SANDBOX_RE
from server.web import bodies, errors, guards
from server.web.errors import FAULTS, JSONAnswer, dumps, is_fault
from server.web.services import services
from server.web.views.instructor import ago, done, for_class, instructor_only, render, report_words
from server.web.views.widgets import admitter, sse
from server.widgets import questions, reader, runner
from server.widgets.base import GotoBody, Widget
from server.widgets.flow import plural
from server.widgets.questions import Question
from server.widgets.snapshot import Catalog
from server.widgets.turn import Actor

MODE_TEXT = {
    "own": "The class is back in own sandboxes: each of you acts in your own.",
    "demo": "Demo: you are watching the instructor's sandbox, read-only; the controls are disabled.",
    "together": "Together: the whole class shares one sandbox; every click shows on every page.",
}
CLOSED_TEXT = "The class was closed: you are back in your own sandbox."
EVERY = 1.0  # seconds between the class stream's reads when no event came
REBUILDS_AT_ONCE = 8  # learners' widgets rebuilt side by side
_FOUND: list[Askable] = []
_LOCK = asyncio.Lock()
TYPED = "emqlab.typed"  # the request state's key for the join form's code and name, refilled when refused
MODE_SHORT = {"own": "in own sandboxes", "demo": "in a demo", "together": "working together"}


# -- the class as its pages show it, and its results --------------------------------------------------


@dataclass(frozen=True)
class ClassState:
    room: Room
    learners: list[roster.Learner]
    counted: list[Counted]
    given: list[answers.Given]  # every answer, for results.csv


def tours(catalog: Catalog) -> dict[str, list[str]]:
    return {name: [s.id for s in widget.tour] for name, widget in catalog.widgets.items()}


def question_of(catalog: Catalog, widget: str, question: str) -> Question | None:
    found = catalog.widgets.get(widget)
    return next((q for q in catalog.asked(found) if q.id == question), None) if found else None


async def read_class(request: Request, room: Room) -> ClassState:
    conn, catalog = services(request).conn, services(request).catalog
    given, runs = await answers.read(conn, room.code)
    learners = await roster.read(conn, room.code, tours(catalog), runs)
    counted = answers.counted(given, [row.id for row in learners], legends_of(catalog))
    return ClassState(room, learners, counted, given)


def legends_of(catalog: Catalog) -> dict[tuple[str, str], str]:
    return {(q.widget, q.id): q.general() for qs in catalog.questions.values() for q in qs}


def revealed(counted: Counted, room: Room) -> bool:
    """Met on their own (each saw their verdict): at once. Asked: once revealed, or the class moved on."""
    ask = room.ask
    if counted.round is None or ask is None or (ask.widget, ask.question, ask.step, room.mode) != (
            counted.widget, counted.question, counted.step, counted.mode):
        return True
    return ask.revealed and counted.round <= ask.round


def step_words(catalog: Catalog, widget: str, step: int | None) -> str:
    found = catalog.widgets.get(widget)
    if found is None or step is None:
        return ""
    label = found.tour[step - 1].label if 0 < step <= len(found.tour) else "the scenario as it lands"
    return f"step {step} ({label})"


def roster_rows(state: ClassState) -> list[dict[str, Any]]:
    now = time.time()
    return [{"id": row.id, "name": row.name, "page": row.page or "—",
             "widget": (row.widget or "—").replace("ex:", "exercise ", 1),  # an exercise's run is recorded as ex:<name>
             "progress": roster.progress_words(row), "exercises": roster.exercise_words(row),
             "seen": ago(row.last_seen, now), "last_seen": row.last_seen, "online": row.online,
             "stuck": row.stuck} for row in state.learners]


def shown(counted: Counted, words: Callable[[object], str], open_: bool = True) -> dict[str, Any]:
    """How a question was answered, as the class page and a learner's page (once revealed) say it."""
    return {"answers": [{"value": words(c.value), "count": plural(c.count, "learner"),
                         "mark": ("right" if c.right else "not quite") if open_ else ""} for c in counted.answers],
            "moved": [{"value": words(m.value), "first": m.first, "second": m.second} for m in counted.moved]
            if open_ else []}


def answers_view(request: Request, state: ClassState, projector: bool = False) -> list[dict[str, Any]]:
    catalog: Catalog = services(request).catalog
    names = {row.id: row.name for row in state.learners}
    listed = []
    for counted in state.counted:
        question = question_of(catalog, counted.widget, counted.question)
        words = question.words if question else str
        open_ = revealed(counted, state.room)
        where = ("met on their own" if counted.round is None else
                 f"asked the class at {step_words(catalog, counted.widget, counted.step)}, round {counted.round}")
        where += f" ({MODE_SHORT.get(counted.mode, counted.mode)})"
        missing = [names[m] for m in counted.missing if m in names]
        wrong = counted.common_wrong if open_ else None
        listed.append({
            "key": f"{counted.widget}|{counted.question}|{counted.mode}|{counted.round or '-'}|{counted.step}",
            "legend": counted.legend, "widget": counted.widget, "where": where, "revealed": open_,
            "answered": f"{counted.answered} answered",
            "waiting": (f"{len(missing)} not yet" + ("" if projector or not missing else ": " + ", ".join(missing))),
            **shown(counted, words, open_),
            "common_wrong": ({"value": words(wrong.value), "count": plural(wrong.count, "learner"),
                              "feedback": counted.feedback} if wrong else None),
            "moved_words": (f"{plural(counted.changed, 'learner')} changed their answer, "
                            f"{counted.now_right} of them to the right one" if open_ and counted.moved else ""),
        })
    return listed


def when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)) if seconds else ""


def cell(text: str) -> str:
    """A learner's name cannot run as a formula in the instructor's spreadsheet."""
    return "'" + text if text.startswith(("=", "+", "-", "@", "\t", "\r")) else text


Column = tuple[str, str, str, int | None, int | None]


def column_of(g: answers.Given) -> Column:
    """The results.csv column of an answer: one per question, mode, round and step (met on their own: no step)."""
    return g.widget, g.question, g.mode, g.round, g.step if g.round is not None else None


def column_title(column: Column) -> str:
    widget, question, mode, round_, step = column
    asked = f", asked at step {step}, round {round_}" if round_ is not None else ""
    return f"{widget} {question} ({mode}{asked})"


def csv_text(request: Request, state: ClassState) -> str:
    """One row per learner: their progress, then every answer they gave in the class (each
    mode, round and step a column of its own: `value (right)` or `value (not quite)`)."""
    widgets, dives = list(services(request).catalog.widgets), services(request).course.dives
    exercises = sorted({name for row in state.learners for name in row.exercises})
    ids = {row.id for row in state.learners}
    columns = list(dict.fromkeys(column_of(g) for g in state.given if g.learner in ids))  # in the order first met
    mine = {(g.learner, column_of(g)): g for g in state.given}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["name", "joined", "pages", *(f"{w} steps" for w in widgets), "predictions asked",
                     "predictions right", "class answers", "class answers right",
                     *(f"{e} checks passed" for e in exercises), *map(column_title, columns), "last seen"])
    for row in state.learners:
        reached = {r.widget: len(r.reached) for r in row.records}
        given = [mine.get((row.id, c)) for c in columns]
        answered = [g for g in given if g is not None]
        worked = {r.widget for r in row.records}
        writer.writerow([cell(row.name), when(row.joined), " ".join(d.path for d in dives if worked & set(d.widgets)),
                         *(reached.get(w, 0) for w in widgets),
                         sum(r.asked for r in row.records), sum(r.right for r in row.records),
                         len(answered), sum(g.right for g in answered),
                         *(row.exercises[e][0] if e in row.exercises else "" for e in exercises),
                         *(cell(f"{g.value} ({'right' if g.right else 'not quite'})") if g else "" for g in given),
                         when(row.last_seen)])
    return out.getvalue()


async def results(request: Request, room: Room) -> tuple[str, str]:
    """(results.csv, answers.json) of an open class now."""
    state = await read_class(request, room)
    every = answers.counted(answers.across_modes(state.given), [row.id for row in state.learners],
                            legends_of(services(request).catalog))
    return csv_text(request, state), dumps({"code": room.code, "questions": [c.contract() for c in every]}).decode()


async def texts(request: Request) -> tuple[str, str, str]:
    """(code, csv, answers.json) of an open class now, or of a closed one as kept."""
    code = rooms.normalize_code(request.path_params["code"])
    if (room := await rooms.get(services(request).conn, code)) is not None:
        return code, *await results(request, room)
    found = await rooms.kept_results(services(request).conn, code)
    if found is None:
        days = services(request).settings.results_days
        raise guards.Refused(404, f"no open class has the code {code}, and no class closed in the last "
                                  f"{days} days kept results under it")
    return code, *found


@instructor_only
async def results_file(request: Request) -> Response:
    """results.csv or answers.json, as the path asks."""
    code, csv_body, json_body = await texts(request)
    if request.url.path.endswith(".json"):
        return Response(json_body, media_type="application/json")
    return Response(csv_body, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="class-{code}-results.csv"'})


# -- asking the class ---------------------------------------------------------------------------------


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


# -- the class page, its stream, and the instructor's controls --------------------------------------


class ModeBody(msgspec.Struct, forbid_unknown_fields=True):
    mode: str = ""


class DemoBody(msgspec.Struct, forbid_unknown_fields=True):
    demo: bool


class BringBody(msgspec.Struct, forbid_unknown_fields=True):
    page: str = ""


class ConfirmBody(msgspec.Struct, forbid_unknown_fields=True):
    confirm: bool = False


class Empty(msgspec.Struct, forbid_unknown_fields=True):
    pass


@for_class
async def page(request: Request, room: rooms.Room) -> Response:
    state = await read_class(request, room)
    projector = request.url.path.endswith("/projector")
    return render(request, "class.html", {
        "room": room, "learners": roster_rows(state), "modes": rooms.MODE_WORDS,
        "answers": answers_view(request, state, projector), "projector": projector,
        "askable": await askable(services(request).lab), "ask": room.ask,
        "asked": (await current(request, room))[0] if room.ask else None,
        "dives": services(request).course.dives, "confirm": request.query_params.get("confirm") == "reset",
    })


@for_class
async def follow(request: Request, room: rooms.Room) -> Response:
    """The class page's stream (and the projector's: `?view=projector`, no names)."""
    return sse(request, _class_events(request, room.code, request.query_params.get("view") == "projector"))


async def _class_events(request: Request, code: str, projector: bool) -> AsyncIterator[bytes]:
    conn, hub = services(request).conn, services(request).hub
    deadline = time.monotonic() + services(request).settings.stream_lifetime
    last = b""
    with hub.streams.open(answers.class_stream(code), ()) as sub:
        while time.monotonic() < deadline:
            try:
                room = await rooms.get(conn, code)
                if room is None:
                    yield frame("closed", dumps({"code": code}))
                    return
                state = await read_class(request, room)
                encoded = dumps({"code": room.code, "mode": room.mode, "count": len(state.learners),
                                 "learners": [] if projector else roster_rows(state),
                                 "answers": answers_view(request, state, projector)})
            except FAULTS as exc:  # mid-stream: Valkey's faults said in the frame, a bug ends it
                if not is_fault(exc):
                    raise
                encoded = dumps({"down": "Valkey is unreachable right now; the class page recovers when it returns."})
            if encoded != last:
                last = encoded
                yield frame("roster", encoded)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(EVERY):
                    await sub.queue.get()
                sub.drain()  # a burst of answers is one read


@for_class
async def roster_json(request: Request, room: rooms.Room) -> Response:
    """roster.json: exactly the documented fields."""
    rows = await roster.read(services(request).conn, room.code, tours(services(request).catalog))
    return JSONAnswer({"code": room.code, "mode": room.mode, "learners": [row.public() for row in rows]})


async def switch(request: Request, room: rooms.Room, mode: str) -> Response:
    host = None
    if mode == "demo":
        host = room.host or None
        with contextlib.suppress(guards.Refused):
            host = guards.visitor_of(request)  # the instructor's own sandbox is the one shown
        if not host:
            raise guards.Refused(409, "open a page of the course in this browser first: the demo shows its sandbox")
    conn = services(request).conn
    changed = await rooms.set_mode(conn, room.code, mode, host)
    assert changed is not None
    await conn.expire(rooms.room_key(room.code), services(request).settings.room_ttl)  # the class lives on
    await announce(request, changed, {"action": "mode", "mode": mode, "reconnect": True, "text": MODE_TEXT[mode]})
    return done(request, f"Class {room.code}: {rooms.MODE_WORDS[mode]}.", {"room": room.code, "mode": mode}, room=room)


@for_class
async def mode(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, ModeBody)
    return await switch(request, room, rooms.clean_mode(body.mode))


@for_class
async def demo(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, DemoBody)
    return await switch(request, room, "demo" if body.demo else "own")


@for_class
async def bring(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, BringBody)
    dives = {d.path: d for d in services(request).course.dives}
    if body.page not in dives:
        raise bodies.BadBody(400, f"'page' must be one of the course's dives: {', '.join(sorted(dives))}")
    title = dives[body.page].title
    await announce(request, room, {"action": "goto", "page": body.page,
                                   "text": f"Your instructor brought everyone to {title}."})
    return done(request, f"Everyone in class {room.code} was sent to {title}.", {"page": body.page}, room=room)


@for_class
async def reset_learners(request: Request, room: rooms.Room) -> Response:
    body = await bodies.read_form(request, ConfirmBody)
    if not body.confirm:
        raise bodies.BadBody(400, "'confirm' must be true: this resets every learner's sandbox")
    conn = services(request).conn
    ids = await learners.learner_ids(conn, room.code)
    names = {s: await learners.name_of(conn, s) for s in ids}
    report = await resets.reset_sandboxes(services(request).lab, [*ids, room.sandbox])
    return done(request, f"Every learner of class {room.code} was reset ({plural(len(ids), 'learner')}; "
                         f"{report_words(report, names)}).",
                {"reset": len([s for s in ids if s in report.reset]), "failed": report.failed}, room=room)


async def learner_of(request: Request, room: rooms.Room) -> str:
    sandbox = str(request.path_params["sandbox"])
    if not SANDBOX_RE.fullmatch(sandbox) or sandbox not in await learners.learner_ids(services(request).conn,
                                                                                      room.code):
        raise guards.Refused(404, f"class {room.code} has no such learner")
    return sandbox


@for_class
async def reset_learner(request: Request, room: rooms.Room) -> Response:
    await bodies.read_form(request, Empty)
    sandbox = await learner_of(request, room)
    name = await learners.name_of(services(request).conn, sandbox)
    failed = (await resets.reset_sandboxes(services(request).lab, [sandbox])).failed
    said = f"could not be reset: {failed[sandbox]}" if failed else "was reset."
    return done(request, f"{name or sandbox} {said}", {"reset": None if failed else sandbox, "failed": failed},
                room=room)


@for_class
async def watch(request: Request, room: rooms.Room) -> Response:
    sandbox = await learner_of(request, room)
    dives = [d.path for d in services(request).course.dives]
    seen = presence.page(as_dict(await services(request).conn.hgetall(keys.meta_key(sandbox))))
    response = RedirectResponse(seen if seen is not None and seen in dives else dives[0], status_code=303)
    services(request).cookies.watch.attach(response, sandbox)
    return response


@instructor_only
async def stop_watching(request: Request) -> Response:
    response = done(request, "You stopped watching: your pages act in your own sandbox again.")
    services(request).cookies.watch.clear(response)
    return response


@for_class
async def join(request: Request, room: rooms.Room) -> Response:
    visitor = guards.visitor_of(request)
    if room.host != visitor:
        await services(request).conn.hset(rooms.room_key(room.code), "host", visitor)
    response = done(request, f"You are in class {room.code} ({room.name}).", {"room": room.code}, room=room)
    services(request).cookies.room.attach(response, room.code)
    return response


@for_class
async def close(request: Request, room: rooms.Room) -> Response:
    conn, days = services(request).conn, services(request).settings.results_days
    await rooms.keep_results(conn, room.code, room.name, *await results(request, room), days)
    audience = await rooms.audience(conn, room)
    await rooms.close(conn, room.code)
    report = await resets.reset_sandboxes(services(request).lab, [room.sandbox])
    await conn.zrem(keys.REGISTRY_KEY, room.sandbox)
    await events.publish(conn, "room", audience, {"code": room.code, "action": "closed", "reconnect": True,
                                                  "text": CLOSED_TEXT})
    await answers.tell(conn, room.code, "closed")
    return done(request, f"Class {room.code} was closed; its results stay downloadable for {days} days.",
                {"room": room.code, "failed": report.failed})


# -- the room page: the learner's side ---------------------------------------------------------------


class JoinBody(msgspec.Struct, forbid_unknown_fields=True):
    code: str | int | None = None
    name: str | int | None = None


class Vote(msgspec.Struct, forbid_unknown_fields=True):
    answer: int | float | str


async def current_room(request: Request) -> rooms.Room | None:
    code = services(request).cookies.room.read(request)
    if not isinstance(code, str):
        return None
    room, member, _ = await rooms.membership(services(request).conn, code, guards.visitor_of(request))
    return room if member else None


def room_context(request: Request, **extra: Any) -> dict[str, Any]:
    return {"room": None, "code": "", "name": "", "modes": rooms.MODE_WORDS, "dives": services(request).course.dives,
            "is_instructor": guards.is_instructor(request), **extra}


async def room_page(request: Request) -> Response:
    room = await current_room(request)  # Valkey away: said on this page (`refused`), the form still shows
    name = await learners.name_of(services(request).conn, guards.visitor_of(request))
    prefill = ""
    with contextlib.suppress(rooms.BadRoom):
        prefill = rooms.normalize_code(request.query_params.get("code", ""))
    return render(request, "room.html", room_context(request, room=room, code=prefill, name=name))


async def room_refused(request: Request, refusal: Refusal) -> Response:
    """A refusal on the room's page (the app's handlers call it): JSON to a script, else the page again
    with the sentence and the form refilled with what was typed."""
    if bodies.wants_json(request):
        return errors.json_answer(refusal)
    typed, named = request.scope.get("state", {}).get(TYPED, ("", ""))
    room = None
    with contextlib.suppress(Refusal, RedisError, *errors.VALKEY_DOWN):  # the refusal is what this page says
        room = await current_room(request)
    return render(request, "room.html", room_context(request, room=room, error=refusal.message, code=typed[:12],
                                                     name=named[:40]), refusal.status)


async def join_room(request: Request) -> Response:
    guards.check_origin(request)
    visitor = guards.visitor_of(request)  # a visitor has a sandbox cookie: they opened a page
    body = await bodies.read_form(request, JoinBody)
    typed, named = (v if isinstance(v, str) else "" for v in (body.code, body.name))
    request.scope.setdefault("state", {})[TYPED] = (typed, named)  # refused: the form refilled with them
    code = rooms.normalize_code(body.code)
    name = learners.clean_name(body.name)
    settings, conn = services(request).settings, services(request).conn
    async with guards.attempt(request, "join"):  # counted first, given back when the code is a class's
        room = await rooms.get(conn, code)
        if room is None:
            raise guards.Refused(404, f"no open class has the code {code}: check it with your instructor")
    await admitter(request, visitor, used=True)()  # live now: the reaper keeps the name's sandbox
    await learners.join(conn, code, visitor, name, settings.room_ttl, settings.sandbox_ttl * 2)
    await rooms.record_join(conn, code, settings.room_ttl)
    response = done(request, f"You joined class {room.code} as {name} ({rooms.MODE_WORDS[room.mode]}).",
                    {"room": {"code": room.code, "name": room.name, "mode": room.mode}}, back="/room", flash=False)
    services(request).cookies.room.attach(response, room.code)
    return response


async def leave_room(request: Request) -> Response:
    guards.check_origin(request)
    code = services(request).cookies.room.read(request)
    if isinstance(code, str):
        await learners.leave(services(request).conn, code, guards.visitor_of(request))
    response = done(request, "You left the class.", back="/room", flash=False)
    services(request).cookies.room.clear(response)
    return response


async def asked(request: Request, entry: guards.Entry) -> dict[str, Any] | None:
    """The question put to the learner's class, their own answer, and once revealed how the class answered."""
    if entry.room is None or entry.ask is None:
        return None
    conn = services(request).conn
    room = await rooms.get(conn, entry.room)
    if room is None or room.ask is None:
        return None
    found, ask = await current(request, room)
    question = question_of(services(request).catalog, ask.widget, ask.question)
    words = question.words if question else str
    given, _ = await answers.read(conn, room.code)
    ids = await learners.learner_ids(conn, room.code)
    counted = {c.key: c for c in answers.counted(given, ids, {})}
    this = counted.get((ask.widget, ask.question, room.mode, ask.round, ask.step))
    mine = next((g for g in given if g.learner == entry.visitor and g.round == ask.round and g.mode == room.mode
                 and (g.widget, g.question, g.step) == (ask.widget, ask.question, ask.step)), None)
    vote = (await answers.votes(conn, room.code, ask.round)).get(entry.visitor)
    said: dict[str, Any] = {
        "widget": ask.widget, "question": ask.question, "legend": found.legend, "step": ask.step,
        "round": ask.round, "revealed": ask.revealed, "page": dive_of(request, ask.widget),
        "votes": room.mode != "own", "kind": question.answer if question else "number",
        "choices": [{"value": v, "label": label} for v, label in (question.choices if question else ())],
        "answered": f"{plural(this.answered if this else 0, 'learner')} of {len(ids)} answered",
        "mine": (mine_words(mine, words, ask.veils(room.mode)) if mine else
                 f"Your answer {words(vote)} is in: it is judged when your instructor presses." if vote is not None
                 else ""),
    }
    if ask.revealed and this is not None:
        tally = shown(this, words)
        said.update(counts=tally["answers"], moved=tally["moved"])
    return said


def mine_words(mine: answers.Given, words: Callable[[object], str], veiled: bool) -> str:
    """The learner's own answer to the asked question; its verdict only once revealed (own sandboxes)."""
    if veiled:
        return f"Your answer: {words(mine.value)} — it is in; its verdict shows when your instructor reveals."
    return f"Your answer: {words(mine.value)} — " + (mine.text or f"{'Right' if mine.right else 'Not quite'}.")


async def ask_state(request: Request) -> Response:
    entry = await guards.enter(request, write=False, counts="reads")
    return JSONAnswer({"ask": await asked(request, entry)})


async def answer(request: Request) -> Response:
    guards.check_origin(request)
    entry = await guards.enter(request, write=False)  # write=False: a demo's learners vote, read-only
    body = await bodies.read_form(request, Vote)
    if entry.room is None or entry.ask is None:
        raise guards.Refused(409, "your class is asked no question now")
    if entry.mode == "own":
        raise guards.Refused(409, "in own sandboxes you answer in the widget itself, with its button")
    if entry.ask.revealed:
        raise guards.Refused(409, "the answers of this round are revealed: wait for the next question")
    value = body.answer if not isinstance(body.answer, str) else body.answer.strip()[:200]
    await answers.vote(services(request).conn, entry.room, entry.ask.round, entry.visitor, value,
                       services(request).settings.room_ttl)
    return JSONAnswer({"ok": True, "message": "Your answer is in: it is judged when your instructor presses."})


def routes() -> list[BaseRoute]:
    base = "/instructor/rooms/{code}"
    return [
        Route(base, page, methods=["GET"]),
        Route(f"{base}/projector", page, methods=["GET"]),
        Route(f"{base}/roster.json", roster_json, methods=["GET"]),
        Route(f"{base}/mode", mode, methods=["POST"]),
        Route(f"{base}/demo", demo, methods=["POST"]),
        Route(f"{base}/bring", bring, methods=["POST"]),
        Route(f"{base}/reset-learners", reset_learners, methods=["POST"]),
        Route(base + "/learners/{sandbox}/reset", reset_learner, methods=["POST"]),
        Route(base + "/learners/{sandbox}/watch", watch, methods=["GET"]),
        Route("/instructor/watch/stop", stop_watching, methods=["POST"]),
        Route(f"{base}/join", join, methods=["POST"]),
        Route(f"{base}/close", close, methods=["POST"]),
        Route(f"{base}/events", follow, methods=["GET"]),
        Route(f"{base}/results.csv", results_file, methods=["GET"]),
        Route(f"{base}/answers.json", results_file, methods=["GET"]),
        Route(f"{base}/ask", ask, methods=["POST"]),
        Route(f"{base}/reveal", reveal, methods=["POST"]),
        Route(f"{base}/second-round", second_round, methods=["POST"]),
        Route(f"{base}/ask/end", end, methods=["POST"]),
        Route(f"{base}/press", press, methods=["POST"]),
        Route("/room", room_page, methods=["GET"]),
        Route("/room/join", join_room, methods=["POST"]),
        Route("/room/leave", leave_room, methods=["POST"]),
        Route("/room/ask", ask_state, methods=["GET"]),
        Route("/room/answer", answer, methods=["POST"]),
    ]
