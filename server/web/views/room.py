"""The room page: join a class with its code and your name, see its mode, leave.

    GET  /room          the page (the class you are in, its mode; the join form)
    POST /room/join     {code, name} -> signed room cookie, 303 to /room (404 for an unknown code)
    POST /room/leave    back to your own sandbox, out of the class

The name (1 to 40 characters) is kept with the learner's own sandbox, so a
learner who leaves and joins again keeps it. While the class exists, the
middleware resolves each request of a member to the sandbox the class's mode
names: their own, the instructor's (demo: read-only, actions answer 403) or
the class's shared one (together).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from server.sandboxes import learners, rooms
from server.web import body, forms, guard
from server.web.answer import JSONAnswer
from server.web.errors import VALKEY_FAULTS, fault_message
from server.web.state import course_of, respond


async def current_room(request: Request) -> rooms.Room | None:
    code = guard.room_of(request)
    if code is None:
        return None
    return await rooms.get(request.app.state.conn, code)


async def known_name(request: Request) -> str:
    """The name this visitor joined with before, if any (kept with their sandbox)."""
    try:
        return await learners.name_of(request.app.state.conn, guard.visitor_of(request))
    except guard.NoSandbox:
        return ""


def render(request: Request, status: int = 200, **context: Any) -> Response:
    ctx: dict[str, Any] = {
        "course": course_of(request),
        "room": None,
        "error": None,
        "code": "",
        "name": "",
        "modes": rooms.MODE_WORDS,
        "is_instructor": guard.is_instructor(request),
        "dives": course_of(request).dives,
        **context,
    }
    return respond(request, "room.html", ctx, status)


async def page(request: Request) -> Response:
    try:
        room = await current_room(request)
        name = await known_name(request)
    except VALKEY_FAULTS as exc:
        return render(request, 503, error=fault_message(exc))
    prefill = request.query_params.get("code", "")
    try:
        prefill = rooms.normalize_code(prefill) if prefill else ""
    except rooms.BadRoom:
        prefill = ""
    return render(request, 200, room=room, code=prefill, name=name)


async def refused(request: Request, status: int, message: str, code: str = "", name: str = "") -> Response:
    if forms.wants_json(request):
        return JSONAnswer({"error": message}, status_code=status)
    try:
        room = await current_room(request)
    except VALKEY_FAULTS:
        room = None
    return render(request, status, room=room, error=message, code=code, name=name)


async def join(request: Request) -> Response:
    typed, named = "", ""
    try:
        guard.check_origin(request)
        visitor = guard.visitor_of(request)  # a visitor has a sandbox cookie (they opened a page)
        fields = await forms.read_fields(request)
        typed = fields["code"] if isinstance(fields.get("code"), str) else ""
        named = fields["name"] if isinstance(fields.get("name"), str) else ""
        code = rooms.normalize_code(fields.get("code"))
        name = learners.clean_name(fields.get("name"))
        room = await admitted(request, code)
        settings = request.app.state.settings
        # Registered live now: the name is kept with a sandbox the reaper keeps.
        await guard.admit_request(request, visitor, used=True)
        await learners.join(request.app.state.conn, code, visitor, name, settings.room_ttl, settings.sandbox_ttl * 2)
        await rooms.record_join(request.app.state.conn, code, settings.room_ttl)
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc), typed[:12], named[:40])
    except guard.NoSandbox as exc:
        return await refused(request, 403, str(exc))
    except (body.BadBody, rooms.BadRoom, learners.BadName) as exc:
        return await refused(request, getattr(exc, "status", 400), str(exc), typed[:12], named[:40])
    except VALKEY_FAULTS as exc:
        return await refused(request, 503, fault_message(exc), typed[:12], named[:40])
    if forms.wants_json(request):
        response: Response = JSONAnswer({
            "ok": True, "room": {"code": room.code, "name": room.name, "mode": room.mode},
            "message": f"You joined class {room.code} as {name} ({rooms.MODE_WORDS[room.mode]}).",
        })
    else:
        response = RedirectResponse("/room", status_code=303)
    request.app.state.room_cookie.attach(response, room.code)
    return response


async def admitted(request: Request, code: str) -> rooms.Room:
    """The class with that code; a guessed code counts against the client."""
    await guard.check_attempts(request, "join")
    room = await rooms.get(request.app.state.conn, code)
    if room is None:
        await guard.count_failed_attempt(request, "join")
        raise guard.Refused(404, f"no open room has the code {code}: check it with your instructor")
    return room


async def leave(request: Request) -> Response:
    try:
        guard.check_origin(request)
        code = guard.room_of(request)
        if code is not None:
            await learners.leave(request.app.state.conn, code, guard.visitor_of(request))
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc))
    except guard.NoSandbox as exc:
        return await refused(request, 403, str(exc))
    except VALKEY_FAULTS as exc:
        return await refused(request, 503, fault_message(exc))
    response = JSONAnswer({"ok": True}) if forms.wants_json(request) else RedirectResponse("/room", status_code=303)
    request.app.state.room_cookie.clear(response)
    return response


def routes() -> list[Route]:
    return [
        Route("/room", page, methods=["GET"]),
        Route("/room/join", join, methods=["POST"]),
        Route("/room/leave", leave, methods=["POST"]),
    ]
