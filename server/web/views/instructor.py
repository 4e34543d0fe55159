"""The instructor's page and endpoints.

    GET  /instructor                     the page: sign-in form (401) or the live sandboxes and rooms
    POST /instructor/sign-in             {token} -> signed instructor cookie, 303 to /instructor
    POST /instructor/sign-out
    GET  /instructor/overview            JSON: sandboxes and rooms
    POST /instructor/reset               {sandbox: ID} | {room: CODE} | {all: true}
    POST /instructor/rooms               {name} -> a new class (its host: this browser), 303 to its page

The class page and every class control are in classroom.py.

Without EMQLAB_INSTRUCTOR_TOKEN every one answers 403; without the signed
instructor cookie (or `Authorization: Bearer <token>`) 401; a state change
from a foreign Origin 403. Forms work without JavaScript (POST, then 303 back
to the page, with a one-shot notice in a signed cookie); JSON callers get JSON.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from server.sandboxes import learners, lifecycle, rooms
from server.sandboxes.sandbox import REGISTRY_KEY, SANDBOX_RE
from server.web import body, forms, guard
from server.web.answer import JSONAnswer
from server.web.errors import VALKEY_FAULTS, fault_message
from server.web.state import course_of, respond
from server.widgets.flow import plural

FLASH_COOKIE = "emqlab_flash"
LISTED = 500  # sandboxes shown on the page, most recent first
UNAVAILABLE = "Valkey is unreachable right now; try again when it returns."


def ago(seconds_since_epoch: float, now: float) -> str:
    delta = max(0, int(now - seconds_since_epoch))
    if delta < 60:
        return f"{delta} s ago"
    if delta < 3600:
        return f"{delta // 60} min ago"
    return f"{delta // 3600} h {delta % 3600 // 60} min ago"


async def overview_data(request: Request) -> dict[str, Any]:
    conn = request.app.state.conn
    now = time.time()
    sandboxes = await lifecycle.list_sandboxes(conn, limit=LISTED)
    total = int(await conn.zcard(REGISTRY_KEY))
    room_list = await rooms.list_rooms(conn)
    by_id = {s.id: s for s in sandboxes}

    def room_row(room: rooms.Room) -> dict[str, Any]:
        live = by_id.get(room.sandbox)
        return {
            **room.as_json(), "opened": ago(room.created, now),
            "last_seen": live.last_seen if live else None,
            "ago": ago(live.last_seen, now) if live else None,
            "page": live.page if live else None, "widget": live.widget if live else None,
        }

    return {
        "now": now,
        "total_sandboxes": total,
        "sandboxes": [{**s.as_json(), "ago": ago(s.last_seen, now)} for s in sandboxes],
        "rooms": [room_row(r) for r in room_list],
    }


def render(request: Request, status: int = 200, **context: Any) -> Response:
    settings = request.app.state.settings
    flash = request.app.state.flash_cookie.read(request)
    ctx = {
        "course": course_of(request),
        "enabled": bool(settings.instructor_token),
        "signed_in": guard.is_instructor(request),
        "flash": flash if isinstance(flash, str) else None,
        "my_room": guard.room_of(request),
        "modes": rooms.MODE_WORDS,
        "confirm_all": request.query_params.get("confirm") == "all",
        "error": None,
        **context,
    }
    response = respond(request, "instructor.html", ctx, status)
    if flash is not None or request.cookies.get(FLASH_COOKIE):
        request.app.state.flash_cookie.clear(response)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="emqlab-instructor"'
    return response


def done(request: Request, message: str, data: dict[str, Any], status: int = 200,
         back: str = "/instructor") -> Response:
    """The answer to a successful change: JSON, or a 303 back to the page with a notice."""
    if forms.wants_json(request):
        return JSONAnswer({"ok": True, "message": message, **data}, status_code=status)
    response = RedirectResponse(back, status_code=303)
    request.app.state.flash_cookie.attach(response, message)
    return response


async def refused(request: Request, status: int, message: str) -> Response:
    if forms.wants_json(request) or (request.method == "GET" and request.url.path != "/instructor"):
        headers = {"WWW-Authenticate": 'Bearer realm="emqlab-instructor"'} if status == 401 else None
        return JSONAnswer({"error": message}, status_code=status, headers=headers)
    context: dict[str, Any] = {"error": message}
    if guard.is_instructor(request):
        try:
            context.update(await overview_data(request))
        except VALKEY_FAULTS:
            context["error"] = f"{message} ({UNAVAILABLE})"
    return render(request, status, **context)


Handler = Callable[[Request], Awaitable[Response]]


def instructor_only(handler: Handler) -> Handler:
    """The endpoint run `guarded`: an instructor's, every refusal a clear 4xx (or 503)."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        return await guarded(request, handler)

    return endpoint


async def guarded(request: Request, handler: Handler) -> Response:
    """Run an instructor endpoint: every refusal a clear 4xx (or 503)."""
    try:
        await guard.require_instructor(request)
        return await handler(request)
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc))
    except (body.BadBody, rooms.BadRoom) as exc:
        return await refused(request, getattr(exc, "status", 400), str(exc))
    except rooms.RoomsFull as exc:
        return await refused(request, 409, str(exc))
    except VALKEY_FAULTS as exc:
        return await refused(request, 503, fault_message(exc))


# -- pages -------------------------------------------------------------------------


async def page(request: Request) -> Response:
    settings = request.app.state.settings
    if not settings.instructor_token:
        return render(request, 403, error="Instructor features are off:"
                      " start the site with EMQLAB_INSTRUCTOR_TOKEN set.")
    if not guard.is_instructor(request):
        return render(request, 401)
    try:
        return render(request, 200, **await overview_data(request))
    except VALKEY_FAULTS as exc:
        return render(request, 503, error=fault_message(exc), sandboxes=[], rooms=[], total_sandboxes=0)


async def sign_in(request: Request) -> Response:
    settings = request.app.state.settings
    try:
        if not settings.instructor_token:
            raise guard.Refused(403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN")
        guard.check_origin(request)
        fields = await forms.read_fields(request)
        # The token is judged first: a right one signs in even while this
        # address is locked out; a wrong one counts (INCR first) and past the
        # limit answers 429.
        if not guard.token_matches(fields.get("token"), settings.instructor_token):
            await guard.count_failed_attempt(request, "sign-in")
            raise guard.Refused(401, "that is not the instructor token")
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc))
    except body.BadBody as exc:
        return await refused(request, exc.status, str(exc))
    except VALKEY_FAULTS as exc:
        return await refused(request, 503, fault_message(exc))
    response = done(request, "Signed in as the instructor.", {})
    request.app.state.instructor_cookie.attach(response, guard.token_fingerprint(settings.instructor_token))
    return response


async def sign_out(request: Request) -> Response:
    try:
        guard.check_origin(request)
    except guard.Refused as exc:
        return await refused(request, exc.status, str(exc))
    response = (
        JSONAnswer({"ok": True}) if forms.wants_json(request) else RedirectResponse("/instructor", status_code=303)
    )
    request.app.state.instructor_cookie.clear(response)
    return response


@instructor_only
async def overview(request: Request) -> Response:
    return JSONAnswer(await overview_data(request))


# -- resets ------------------------------------------------------------------------


async def reset(request: Request) -> Response:
    return await guarded(request, do_reset)


async def do_reset(request: Request) -> Response:
    fields = await forms.read_fields(request)
    conn = request.app.state.conn
    chosen = [name for name in ("sandbox", "room", "all") if fields.get(name) not in (None, "", False)]
    if len(chosen) != 1:
        raise body.BadBody("say what to reset: exactly one of sandbox (an id), room (a code) or all (true)")
    what = chosen[0]
    if what == "all":
        if not forms.as_flag(fields["all"], "all"):
            raise body.BadBody("'all' must be true to reset every sandbox")
        removed = await lifecycle.reset_sandboxes(conn, None)
        said = f"Every sandbox was reset: {plural(removed, 'key')} removed."
        return done(request, said, {"reset": "all", "removed": removed})
    if what == "sandbox":
        sandbox = fields["sandbox"]
        if not isinstance(sandbox, str) or not SANDBOX_RE.fullmatch(sandbox):
            raise body.BadBody("'sandbox' must be a sandbox id: s and 10 lowercase letters or digits")
        if not await lifecycle.is_live(conn, sandbox):
            raise guard.Refused(404, f"no live sandbox {sandbox}")
        removed = await lifecycle.reset_sandboxes(conn, [sandbox])
        return done(request, f"Sandbox {sandbox} was reset: {plural(removed, 'key')} removed.",
                    {"reset": "sandbox", "sandbox": sandbox, "removed": removed})
    room = await rooms.get(conn, rooms.normalize_code(fields["room"]))
    if room is None:
        raise guard.Refused(404, "no open room has that code")
    removed = await lifecycle.reset_sandboxes(conn, [room.sandbox, *await learners.learner_ids(conn, room.code)])
    return done(request, f"Room {room.code} ({room.name}) was reset: {plural(removed, 'key')} removed.",
                {"reset": "room", "room": room.code, "sandbox": room.sandbox, "removed": removed})


# -- rooms -------------------------------------------------------------------------


@instructor_only
async def create_room(request: Request) -> Response:
    settings = request.app.state.settings
    fields = await forms.read_fields(request)
    try:
        host = guard.visitor_of(request)
    except guard.NoSandbox:
        host = ""  # a Bearer caller without a browser sandbox: the demo names one later
    room = await rooms.create(request.app.state.conn, fields.get("name"), settings.room_ttl,
                              settings.max_rooms, host=host)
    response = done(
        request, f"Room {room.code} ({room.name}) is open: learners join at /room with the code {room.code} "
        "and their name.", {"room": room.as_json()}, status=201, back=f"/instructor/rooms/{room.code}",
    )
    request.app.state.room_cookie.attach(response, room.code)
    return response


def routes() -> list[Route]:
    return [
        Route("/instructor", page, methods=["GET"]),
        Route("/instructor/sign-in", sign_in, methods=["POST"]),
        Route("/instructor/sign-out", sign_out, methods=["POST"]),
        Route("/instructor/overview", overview, methods=["GET"]),
        Route("/instructor/reset", reset, methods=["POST"]),
        Route("/instructor/rooms", create_room, methods=["POST"]),
    ]
