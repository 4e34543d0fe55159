"""The class as a learner's dive page shows it: the banner (the class, or an instructor's Watch) and the
question the class is asked, with its vote form and, once revealed, how the class answered.

One drawing, `_class_box.html`, from the typed `Shown`: at the page's first paint (`shown`), and again on
GET /room/ask asking for HTML whenever the room changes (room.js morphs it in). GET /room/ask's JSON is
the same `Asked`. The vote form posts to /room/answer with or without JavaScript.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import msgspec
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import Response

from server.emq.wire import as_dict
from server.sandboxes import answers, keys, learners, rooms
from server.web import bodies, guards
from server.web.errors import JSONAnswer
from server.web.services import services
from server.web.templating import respond
from server.web.views.asking import current, dive_of
from server.web.views.class_state import question_of, shown
from server.web.views.instructor import done
from server.widgets.flow import plural


class Choice(msgspec.Struct):
    value: str
    label: str


class Count(msgspec.Struct):
    value: str
    count: str  # "2 learners"
    mark: str  # "right", "not quite"


class Move(msgspec.Struct):
    value: str
    first: int
    second: int


class Asked(msgspec.Struct, omit_defaults=True):
    """The question put to the learner's class, their own answer, and once revealed how the class answered."""

    widget: str
    question: str
    legend: str
    step: int
    round: int
    revealed: bool
    page: str | None  # the dive the question is on: its vote form shows there
    votes: bool  # a demo or together: the learner votes in the box (own sandboxes: in the widget)
    kind: str  # "number" or "choice"
    choices: list[Choice]
    answered: str
    mine: str
    counts: list[Count] | None = None  # None (left out): not revealed
    moved: list[Move] | None = None


class Banner(msgspec.Struct):
    text: str  # empty: no class, the banner hidden
    demo: bool = False
    watching: bool = False  # an instructor's Watch: the banner offers Stop watching
    readonly: bool = False  # the page only watches: its questions say who presses (room.js puts it in)
    closed: bool = False  # the class this browser joined has closed: the banner offers to forget it


class Box(msgspec.Struct):
    """What `_class_box.html` draws: the banner, the question (None: none asked) and the page it is drawn on."""

    banner: Banner
    ask: Asked | None
    page: str  # a dive's path: its own question's vote form shows on it


class Vote(msgspec.Struct, forbid_unknown_fields=True):
    answer: int | float | str
    page: str = ""  # the form's page, where a form's post goes back to


async def asked(request: Request, entry: guards.Entry) -> Asked | None:
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
    said = Asked(
        ask.widget, ask.question, found.legend, ask.step, ask.round, ask.revealed, dive_of(request, ask.widget),
        room.mode != "own", question.answer if question else "number",
        [Choice(v, label) for v, label in (question.choices if question else ())],
        f"{plural(this.answered if this else 0, 'learner')} of {len(ids)} answered",
        mine_words(mine, words, ask.veils(room.mode)) if mine else
        f"Your answer {words(vote)} is in: it is judged when your instructor presses." if vote is not None else "")
    if ask.revealed and this is not None:
        tally = shown(this, words)
        said.counts = msgspec.convert(tally["answers"], list[Count])
        said.moved = msgspec.convert(tally["moved"], list[Move])
    return said


def mine_words(mine: answers.Given, words: Callable[[object], str], veiled: bool) -> str:
    """The learner's own answer to the asked question; its verdict only once revealed (own sandboxes)."""
    if veiled:
        return f"Your answer: {words(mine.value)} — it is in; its verdict shows when your instructor reveals."
    return f"Your answer: {words(mine.value)} — " + (mine.text or f"{'Right' if mine.right else 'Not quite'}.")


async def banner(request: Request, entry: guards.Entry) -> Banner:
    if entry.watching:  # whom the Watch shows, by name (unreadable: "a learner's")
        meta = {}
        with contextlib.suppress(RedisError, OSError):
            meta = as_dict(await services(request).conn.hgetall(keys.meta_key(entry.watching)))
        who = f"{meta['name']}'s" if meta.get("name") else "a learner's"
        where = f" (class {meta['room']})" if meta.get("room") else ""
        said = f"You are watching {who} sandbox{where}, read-only: the controls are disabled."
        return Banner(said, watching=True, readonly=True)
    if entry.room is None:
        return Banner("The class was closed: you are back in your own sandbox." if entry.closed else "",
                      closed=entry.closed)
    if entry.mode == "demo":
        demo = ("you are watching the instructor's sandbox, read-only; the controls are disabled" if entry.readonly
                else "every learner watches your sandbox, read-only")
        return Banner(f"Demo in class {entry.room}: {demo}.", demo=True, readonly=entry.readonly)
    if entry.mode == "together":
        return Banner(f"You are in class {entry.room}, working together: "
                      "everyone in it shares these keys and sees every action live.")
    return Banner(f"You are in class {entry.room}: you act in your own sandbox; your instructor sees your progress.")


async def drawn(request: Request, entry: guards.Entry, page: str) -> Box:
    """The banner and the question (not for a Watch: the question is the learner's) on `page`."""
    return Box(await banner(request, entry), None if entry.watching else await asked(request, entry), page)


async def shown_on(request: Request, page: str) -> Box:
    """The first paint's drawing; nothing to say (no sandbox yet, Valkey away): room.js fetches it later."""
    with contextlib.suppress(guards.Refused, RedisError, OSError):
        return await drawn(request, await guards.enter(request, write=False, counts=""), page)
    return Box(Banner(""), None, page)


async def ask_state(request: Request) -> Response:
    entry = await guards.enter(request, write=False, counts="reads")
    if "text/html" in request.headers.get("accept", ""):
        page = request.query_params.get("page", "")
        return respond(request, "_class_box.html", {"box": await drawn(request, entry, page)})
    return JSONAnswer({"ask": await asked(request, entry)})


def typed(question_kind: str, value: int | float | str) -> int | float | str:
    """A form's answer is text: to a number question, what reads as a finite number is that number."""
    if question_kind != "number" or not isinstance(value, str):
        return value
    with contextlib.suppress(ValueError):
        number = float(value)
        if math.isfinite(number):
            return int(number) if number.is_integer() else number
    return value


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
    if request.headers.get("content-type", "").startswith(bodies.FORM):
        question = question_of(services(request).catalog, entry.ask.widget, entry.ask.question)
        value = typed(question.answer if question else "number", value)
    await answers.vote(services(request).conn, entry.room, entry.ask.round, entry.visitor, value,
                       services(request).settings.room_ttl)
    dives = {d.path for d in services(request).course.dives}
    back = f"{body.page}#class-ask" if body.page in dives else "/room"
    return done(request, "Your answer is in: it is judged when your instructor presses.", back=back, flash=False)
