"""The room page, the learner's side of a class: join with its code and your name, leave it (the class's
question on a dive page: `class_box`).

Unknown codes count as failed attempts of the visitor and of the address, counted before the code is
looked up.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import Response

from server.refusal import Refusal
from server.sandboxes import learners, rooms
from server.web import bodies, errors, guards
from server.web.services import services
from server.web.views.instructor import done, render
from server.web.views.widgets import admitter

TYPED = "emqlab.typed"  # the request state's key for the join form's code and name, refilled when refused


class JoinBody(msgspec.Struct, forbid_unknown_fields=True):
    code: str | int | None = None
    name: str | int | None = None


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
    # a form's 303 goes back to the dive it was posted from (the closed class's banner), else to /room
    page = request.query_params.get("page", "")
    back = page if page in {d.path for d in services(request).course.dives} else "/room"
    response = done(request, "You left the class.", back=back, flash=False)
    services(request).cookies.room.clear(response)
    return response
