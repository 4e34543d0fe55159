"""A class as its pages show it and as the instructor takes it away: roster and answers, read once.

The class page renders the words and its stream sends the same as JSON (the page reads the same
without JavaScript); verdicts show once revealed, the projector has no names. results.csv and
answers.json are read live while the class is open, and kept as they stood when it closes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from server.sandboxes import answers, closed_classes, rooms, roster
from server.sandboxes.answers import Counted
from server.sandboxes.rooms import Room
from server.web import guards
from server.web.errors import dumps
from server.web.services import services
from server.web.views.instructor import ago, instructor_only
from server.widgets.flow import plural
from server.widgets.questions import Question
from server.widgets.snapshot import Catalog

MODE_SHORT = {"own": "in own sandboxes", "demo": "in a demo", "together": "working together"}


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
    # an exercise's run is recorded as ex:<name>
    return [{"id": row.id, "name": row.name, "page": row.page or "—",
             "widget": (row.widget or "—").replace("ex:", "exercise ", 1),
             "progress": roster.progress_words(row), "exercises": roster.exercise_words(row),
             "seen": ago(row.last_seen, now), "last_seen": row.last_seen, "online": row.online,
             "stuck": row.stuck} for row in state.learners]


def shown(counted: Counted, words: Callable[[object], str], open_: bool = True) -> dict[str, Any]:
    """How a question was answered, as the class page and a learner's page (once revealed) say it."""
    return {"answers": [{"value": words(c.value), "count": plural(c.count, "learner"),
                         "mark": ("right" if c.right else "not quite") if open_ else ""} for c in counted.answers],
            "moved": [{"value": words(m.value), "first": m.first, "second": m.second} for m in counted.moved]
            if open_ else []}


class Drawn(msgspec.Struct):
    """What the class page draws that follows the class, and its digest: the page carries the
    digest of what it drew, and fetches itself again when the stream names another."""

    shown: dict[str, Any]  # code, mode, count, answers
    learners: list[dict[str, Any]]  # the roster's rows (none on the projector)
    digest: str


def drawn(request: Request, room: Room, state: ClassState, projector: bool) -> Drawn:
    learners = [] if projector else roster_rows(state)
    shown = {"code": room.code, "mode": room.mode, "count": len(state.learners),
             "answers": answers_view(request, state, projector)}
    # the ages ("12 s ago") change every second: left out, the stream puts them in place from `seen`
    digest = hashlib.sha1(dumps({**shown, "learners": [{**r, "seen": ""} for r in learners]})).hexdigest()[:16]
    return Drawn(shown, learners, digest)


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


@instructor_only
async def results_file(request: Request) -> Response:
    """results.csv or answers.json, as the path asks: of an open class now, or of a closed one as kept."""
    code = rooms.normalize_code(request.path_params["code"])
    if (room := await rooms.get(services(request).conn, code)) is not None:
        csv_body, json_body = await results(request, room)
    elif (found := await closed_classes.kept_results(services(request).conn, code)) is not None:
        csv_body, json_body = found
    else:
        days = services(request).settings.results_days
        raise guards.Refused(404, f"no open class has the code {code}, and no class closed in the last "
                                  f"{days} days kept results under it")
    if request.url.path.endswith(".json"):
        return Response(json_body, media_type="application/json")
    return Response(csv_body, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="class-{code}-results.csv"'})
