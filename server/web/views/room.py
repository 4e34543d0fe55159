"""The room page: join a class's room with its short code, see its mode, leave.

    GET  /room          the page (the room you are in, its mode; the join form)
    POST /room/join     {code} -> signed room cookie, 303 to /room (404 for an unknown code)
    POST /room/leave    back to your own sandbox

While the room exists, every widget request of a member acts in the room's
sandbox (the middleware resolves it), so everyone in the room sees every
action live. In demo mode a learner's actions answer 403.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from server.web import body
from server.web import forms
from server.web import guard
from server.sandboxes import rooms
from server.web.errors import VALKEY_FAULTS, fault_message

UNAVAILABLE = "Valkey is unreachable right now; try again when it returns."


async def current_room(request: Request) -> rooms.Room | None:
    code = guard.room_of(request)
    if code is None:
        return None
    return await rooms.get(request.app.state.conn, code)


def render(request: Request, status: int = 200, **context: Any) -> Response:
    ctx: dict[str, Any] = {
        "course": request.app.state.course,
        "room": None,
        "error": None,
        "code": "",
        "is_instructor": guard.is_instructor(request),
        "dives": request.app.state.course.dives,
        **context,
    }
    return request.app.state.templates.TemplateResponse(request, "room.html", ctx, status_code=status)


async def page(request: Request) -> Response:
    try:
        room = await current_room(request)
    except VALKEY_FAULTS as exc:
        return render(request, 503, error=fault_message(exc))
    prefill = request.query_params.get("code", "")
    try:
        prefill = rooms.normalize_code(prefill) if prefill else ""
    except rooms.BadRoom:
        prefill = ""
    return render(request, 200, room=room, code=prefill)


async def refused(request: Request, status: int, message: str, code: str = "") -> Response:
    if forms.wants_json(request):
        return JSONResponse({"error": message}, status_code=status)
    try:
        room = await current_room(request)
    except VALKEY_FAULTS:
        room = None
    return render(request, status, room=room, error=message, code=code)


async def join(request: Request) -> Response:
    typed = ""
    try:
        guard.check_origin(request)
        guard.visitor_of(request)  # a visitor has a sandbox cookie (they opened a page)
        fields = await forms.read_fields(request)
        given = fields.get("code")
        typed = given if isinstance(given, str) else ""
        code = rooms.normalize_code(fields.get("code"))
        await guard.check_attempts(request, "join")
        room = await rooms.get(request.app.state.conn, code)
        if room is None:
            await guard.count_failed_attempt(request, "join")
            raise guard.Refused(404, f"no open room has the code {code}: check it with your instructor")
        settings = request.app.state.settings
        await rooms.record_join(request.app.state.conn, code, settings.room_ttl)
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc), typed[:12])
    except guard.NoSandbox as exc:
        return await refused(request, 403, str(exc))
    except (body.BadBody, rooms.BadRoom) as exc:
        return await refused(request, getattr(exc, "status", 400), str(exc), typed[:12])
    except VALKEY_FAULTS as exc:
        return await refused(request, 503, fault_message(exc), typed[:12])
    mode = "demo mode: watch the instructor" if room.demo else "everyone acts"
    if forms.wants_json(request):
        response: Response = JSONResponse({"ok": True, "room": {"code": room.code, "name": room.name, "demo": room.demo},
                                           "message": f"You joined room {room.code} ({mode})."})
    else:
        response = RedirectResponse("/room", status_code=303)
    request.app.state.room_cookie.attach(response, room.code)
    return response


async def leave(request: Request) -> Response:
    try:
        guard.check_origin(request)
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc))
    response = JSONResponse({"ok": True}) if forms.wants_json(request) else RedirectResponse("/room", status_code=303)
    request.app.state.room_cookie.clear(response)
    return response


def routes() -> list[Route]:
    return [
        Route("/room", page, methods=["GET"]),
        Route("/room/join", join, methods=["POST"]),
        Route("/room/leave", leave, methods=["POST"]),
    ]
