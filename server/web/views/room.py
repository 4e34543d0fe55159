"""The room page, the learner's side of a class: join with its code and your name, leave it; the class's question.

Unknown codes count as failed attempts of the visitor and of the address, counted before the code is
looked up. An asked question's distribution reaches learners once revealed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import msgspec
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import Response

from server.refusal import Refusal
from server.sandboxes import answers, learners, rooms
from server.web import bodies, errors, guards
from server.web.errors import JSONAnswer
from server.web.services import services
from server.web.views.asking import current, dive_of
from server.web.views.class_state import question_of, shown
from server.web.views.instructor import done, render
from server.web.views.widgets import admitter
from server.widgets.flow import plural

TYPED = "emqlab.typed"  # the request state's key for the join form's code and name, refilled when refused


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


async def page(request: Request) -> Response:
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
