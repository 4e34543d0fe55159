"""The instructor's page and endpoints (sign-in, the overview, resets, a new class), and how the
instructor's, the class's and the room's endpoints answer.

A script (it sent JSON, or asks for it) gets JSON. A page's form gets a 303 back with a one-shot
notice (the flash cookie), or, refused, the page again with the sentence at the refusal's status.
An instructor already signed in stays signed in whatever the address's failed-attempt limit says:
nothing is compared, so nothing is counted.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from server.emq.wire import as_text
from server.lifecycle import resets
from server.refusal import Refusal
from server.sandboxes import closed_classes, keys, learners, presence, rooms
from server.sandboxes.sandbox import SANDBOX_RE
from server.web import bodies, guards
from server.web.bodies import wants_json
from server.web.errors import JSONAnswer, json_answer
from server.web.services import services
from server.web.sessions import session_of
from server.web.templating import respond

REALM = 'Bearer realm="emqlab-instructor"'
Handler = Callable[[Request], Awaitable[Response]]
ClassHandler = Callable[[Request, rooms.Room], Awaitable[Response]]
LEARNER = "that is the instructor's: a learner of a class cannot use it (the instructor signs in at /instructor)"


# -- how the instructor's, the class's and the room's endpoints answer -------------------------------


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    flash = services(request).cookies.flash.read(request)
    flash = flash if isinstance(flash, str) else None
    response = respond(request, template, {"flash": flash, "error": None, **context}, status)
    if flash is not None or request.cookies.get(services(request).cookies.flash.name):
        services(request).cookies.flash.clear(response)
    if status == 401:
        response.headers["WWW-Authenticate"] = REALM
    return response


def done(request: Request, message: str, data: dict[str, Any] | None = None, status: int = 200,
         back: str = "/instructor", flash: bool = True, room: rooms.Room | None = None) -> Response:
    """A form's 303 goes to `room`'s page when given, else to `back`; it shows `message` only if `flash`."""
    if wants_json(request):
        return JSONAnswer({"ok": True, "message": message, **(data or {})}, status_code=status)
    response = RedirectResponse(f"/instructor/rooms/{room.code}" if room else back, status_code=303)
    if flash:
        services(request).cookies.flash.attach(response, message)
    return response


EPHEMERAL = ("This site runs ephemeral (EMQLAB_EPHEMERAL): its classes, sandboxes and progress live in a "
             "temporary Valkey and will not survive a restart.")


def page_context(request: Request, **extra: Any) -> dict[str, Any]:
    """The instructor page's words; `modes`, `my_room` and `confirm_all` show only with the overview."""
    settings = services(request).settings
    code = services(request).cookies.room.read(request)
    return {"enabled": bool(settings.instructor_token), "signed_in": guards.is_instructor(request),
            "ephemeral": EPHEMERAL if settings.ephemeral else "", "modes": rooms.MODE_WORDS,
            "engine_warning": services(request).engine_warning,
            "my_room": code if isinstance(code, str) else None, "back": None, "overview": None,
            "confirm_all": request.query_params.get("confirm") == "all", **extra}


async def refused(request: Request, refusal: Refusal) -> Response:
    """A refusal on the instructor's paths: JSON to a script, else the instructor's page with the sentence
    and a Back link (the class's page under a class's path, but on the class's page itself)."""
    if wants_json(request) or (request.method == "GET" and request.url.path.endswith((".json", ".csv", "/events"))):
        response = json_answer(refusal)
        if refusal.status == 401:
            response.headers["WWW-Authenticate"] = REALM
        return response
    code = request.path_params.get("code")
    own = f"/instructor/rooms/{code}"
    back = own if code and request.url.path not in (own, f"{own}/projector") else "/instructor"
    return render(request, "instructor.html", page_context(request, error=refusal.message, back=back), refusal.status)


def instructor_only(handler: Handler) -> Handler:
    """The instructor's guard first, then `handler`; a failure is the app's handlers' (`refused` says it here)."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        try:
            await guards.require_instructor(request)
        except guards.Refused as exc:
            if exc.status == 401 and guards.bearer_of(request) is None and \
                    isinstance(services(request).cookies.room.read(request), str):
                raise guards.Refused(403, LEARNER) from exc  # a class's learner: refused, not asked to sign in
            raise
        return await handler(request)

    return endpoint


def for_class(handler: ClassHandler) -> Handler:
    """`instructor_only`, then `handler` given the open class the URL names (400 for a code that cannot
    be one, 404 for none)."""

    async def endpoint(request: Request) -> Response:
        code = rooms.normalize_code(request.path_params["code"])
        room = await rooms.get(services(request).conn, code)
        if room is None:
            raise guards.Refused(404, f"no open class has the code {code}")
        return await handler(request, room)

    return instructor_only(functools.wraps(handler)(endpoint))


# -- the instructor's page and endpoints ------------------------------------------------------------

LISTED = 500  # sandboxes shown on the page, most recent first


class SignIn(msgspec.Struct, forbid_unknown_fields=True):
    token: str = ""


class ResetBody(msgspec.Struct, forbid_unknown_fields=True):
    sandbox: str | None = None
    room: str | None = None
    all: bool = False


class NewRoom(msgspec.Struct, forbid_unknown_fields=True):
    name: str = ""


def ago(seconds: float | None, now: float) -> str:
    if seconds is None:
        return "—"
    delta = max(0, int(now - seconds))
    if delta < 60:
        return f"{delta} s ago"
    if delta < 3600:
        return f"{delta // 60} min ago"
    return f"{delta // 3600} h {delta % 3600 // 60} min ago"


async def overview_data(request: Request) -> dict[str, Any]:
    """The open classes, the closed ones whose results are kept, and the most recently active sandboxes:
    who (name, class) and where (page, widget)."""
    conn = services(request).conn
    open_rooms = await rooms.list_rooms(conn)
    found: Any = await conn.zrevrange(keys.REGISTRY_KEY, 0, LISTED - 1, withscores=True)
    ids = [(as_text(s), float(score) / 1000) for s, score in found if SANDBOX_RE.match(as_text(s))]
    metas = await learners.records(conn, [sandbox for sandbox, _ in ids])
    shared = {r.sandbox: r.code for r in open_rooms}
    codes = {r.code for r in open_rooms}
    now, rows = time.time(), []
    for (sandbox, seen), meta in zip(ids, metas):
        room = meta.get("room") if meta.get("room") in codes else None
        rows.append({"id": sandbox, "name": meta.get("name") or None, "room": room or shared.get(sandbox),
                     "shared": sandbox in shared, "page": presence.page(meta), "widget": meta.get("widget"),
                     "last_seen": seen, "ago": ago(seen, now)})
    return {
        "total_sandboxes": int(await conn.zcard(keys.REGISTRY_KEY)),
        "sandboxes": rows,
        "rooms": [{**r.as_json(), "opened": ago(r.created, now)} for r in open_rooms],
        "closed": [{"code": code, "until": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))}
                   for code, until in await closed_classes.results_listed(conn)],
    }


async def page(request: Request) -> Response:
    if not services(request).settings.instructor_token:
        return render(request, "instructor.html", page_context(
            request, error="Instructor features are off: start the site with EMQLAB_INSTRUCTOR_TOKEN set."), 403)
    if guards.bearer_of(request) is None and not guards.signed_in(request):
        return render(request, "instructor.html", page_context(request), 401)
    return await signed_in_page(request)


@instructor_only
async def signed_in_page(request: Request) -> Response:
    overview = await overview_data(request)
    context = page_context(request, signed_in=True, overview=overview)
    if context["my_room"] not in {room["code"] for room in overview["rooms"]}:
        context["my_room"] = None  # the cookie outlives its class: a closed class is no class to be in
    return render(request, "instructor.html", context)


async def sign_in(request: Request) -> Response:
    if not services(request).settings.instructor_token:
        raise guards.Refused(403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN")
    guards.check_origin(request)
    body = await bodies.read_form(request, SignIn)
    if not guards.signed_in(request):
        await guards.check_token(request, body.token)
    # a session of its own in Valkey: the cookie names it and reveals nothing of the token
    sid = session_of(request) or await services(request).sessions.open(services(request).conn)
    response = done(request, "Signed in as the instructor.")
    services(request).cookies.instructor.attach(response, sid)
    return response


async def sign_out(request: Request) -> Response:
    """Ends the session in Valkey, so a copy of the cookie stops counting too (Valkey away: refused,
    and the cookie is kept until it answers)."""
    guards.check_origin(request)
    cookie = services(request).cookies.instructor.read(request)
    await services(request).sessions.close(services(request).conn, cookie)
    response = done(request, "Signed out.", flash=False)
    services(request).cookies.instructor.clear(response)
    return response


@instructor_only
async def overview(request: Request) -> Response:
    return JSONAnswer(await overview_data(request))


@instructor_only
async def watching(request: Request) -> Response:
    watched = services(request).cookies.watch.read(request)
    watched = watched if isinstance(watched, str) and SANDBOX_RE.fullmatch(watched) else None
    meta = (await learners.records(services(request).conn, [watched]))[0] if watched else {}
    return JSONAnswer({"sandbox": watched, "name": meta.get("name") or None, "room": meta.get("room") or None})


@instructor_only
async def reset(request: Request) -> Response:
    body = await bodies.read_form(request, ResetBody)
    lab, conn = services(request).lab, services(request).conn
    if sum(map(bool, (body.sandbox, body.room, body.all))) != 1:
        raise bodies.BadBody(400, "say what to reset: exactly one of sandbox (an id), room (a code) or all (true)")
    if body.all:
        report = await resets.reset_sandboxes(lab, None)
        return done(request, f"Every sandbox was reset: {report.words()}.",
                    {"reset": "all", "count": len(report.reset), "failed": report.failed})
    if (sandbox := body.sandbox) is not None:
        if not SANDBOX_RE.fullmatch(sandbox):
            raise bodies.BadBody(400, "'sandbox' must be a sandbox id: s and 10 lowercase letters or digits")
        if await conn.zscore(keys.REGISTRY_KEY, sandbox) is None:
            raise guards.Refused(404, f"no live sandbox {sandbox}")
        report = await resets.reset_sandboxes(lab, [sandbox])
        name = await learners.name_of(conn, sandbox)
        said = (f"Sandbox {sandbox}{f' ({name})' if name else ''} was reset." if not report.failed
                else f"Sandbox {sandbox} could not be reset: {report.failed[sandbox]}")
        return done(request, said, {"reset": "sandbox", "sandbox": sandbox, "failed": report.failed})
    room = await rooms.get(conn, rooms.normalize_code(body.room))
    if room is None:
        raise guards.Refused(404, "no open class has that code")
    ids = await learners.learner_ids(conn, room.code)
    report = await resets.reset_sandboxes(lab, [room.sandbox, *ids])
    return done(request, f"Class {room.code} ({room.name}) was reset: {report.words()}.",
                {"reset": "room", "room": room.code, "count": len(report.reset), "failed": report.failed})


@instructor_only
async def create_room(request: Request) -> Response:
    settings = services(request).settings
    body = await bodies.read_form(request, NewRoom)
    try:
        host = guards.visitor_of(request)
    except guards.Refused:
        host = ""  # a Bearer caller without a browser sandbox: a demo names its sandbox later
    room = await rooms.create(services(request).conn, body.name, settings.room_ttl, settings.max_rooms, host=host)
    response = done(request, f"Class {room.code} ({room.name}) is open: learners join at /room with the code "
                             f"{room.code} and their name.", {"room": room.as_json()}, status=201, room=room)
    services(request).cookies.room.attach(response, room.code)
    return response


def routes() -> list[BaseRoute]:
    return [
        Route("/instructor", page, methods=["GET"]),
        Route("/instructor/sign-in", sign_in, methods=["POST"]),
        Route("/instructor/sign-out", sign_out, methods=["POST"]),
        Route("/instructor/overview", overview, methods=["GET"]),
        Route("/instructor/watching", watching, methods=["GET"]),
        Route("/instructor/reset", reset, methods=["POST"]),
        Route("/instructor/rooms", create_room, methods=["POST"]),
    ]
