"""How the instructor's, the class's and the room's endpoints answer.

A script (it sent JSON, or asks for it) gets JSON. A page's form gets a 303 back with a one-shot
notice (the flash cookie), or, refused, the page again with the sentence at the refusal's status.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from server.refusal import Refusal
from server.sandboxes import rooms
from server.web import guards
from server.web.answer import JSONAnswer
from server.web.bodies import wants_json
from server.web.errors import json_answer
from server.web.services import services
from server.web.templating import respond

REALM = 'Bearer realm="emqlab-instructor"'
BACK = "emqlab.back"  # the request state's key for a refusal page's Back link
Handler = Callable[[Request], Awaitable[Response]]
ClassHandler = Callable[[Request, rooms.Room], Awaitable[Response]]
LEARNER = "that is the instructor's: a learner of a class cannot use it (the instructor signs in at /instructor)"


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
    and a Back link (the class's page under a class's path, unless `instructor_only` named another)."""
    if wants_json(request) or (request.method == "GET" and request.url.path.endswith((".json", ".csv", "/events"))):
        response = json_answer(refusal)
        if refusal.status == 401:
            response.headers["WWW-Authenticate"] = REALM
        return response
    code = request.path_params.get("code")
    back = request.scope.get("state", {}).get(BACK) or (f"/instructor/rooms/{code}" if code else "/instructor")
    return render(request, "instructor.html", page_context(request, error=refusal.message, back=back), refusal.status)


def instructor_only(handler: Handler, back: str | None = None) -> Handler:
    """The instructor's guard first, then `handler`; a failure is the app's handlers' (`refused` says it
    here), with the page's Back link `back` when given."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        if back is not None:
            request.scope.setdefault("state", {})[BACK] = back
        try:
            await guards.require_instructor(request)
        except guards.Refused as exc:
            if exc.status == 401 and guards.bearer_of(request) is None and \
                    isinstance(services(request).cookies.room.read(request), str):
                raise guards.Refused(403, LEARNER) from exc  # a class's learner: refused, not asked to sign in
            raise
        return await handler(request)

    return endpoint


def for_class(handler: ClassHandler, back: str | None = None) -> Handler:
    """`instructor_only`, then `handler` given the open class the URL names (400 for a code that cannot
    be one, 404 for none)."""

    async def endpoint(request: Request) -> Response:
        code = rooms.normalize_code(request.path_params["code"])
        room = await rooms.get(services(request).conn, code)
        if room is None:
            raise guards.Refused(404, f"no open class has the code {code}")
        return await handler(request, room)

    return instructor_only(functools.wraps(handler)(endpoint), back)
