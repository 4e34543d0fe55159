"""How the instructor's, the class's and the room's endpoints answer.

A script (it sent JSON, or asks for it) gets JSON: `{"ok": true, "message",
…}`, or `{"error"}` at the refusal's status. A page's form gets a 303 back to
its page with a one-shot notice (the signed flash cookie); refused, it gets
the instructor's page again with the sentence, at the refusal's status (401
with the sign-in form). Every failure is a 4xx, or a 503 while Valkey is
away, said in words (errors.answer_error's rules), never a 500.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from server.sandboxes.learners import BadName
from server.sandboxes.rooms import BadRoom, RoomsFull
from server.web import guards
from server.web.answer import JSONAnswer
from server.web.bodies import wants_json
from server.web.errors import answer_error
from server.web.templating import course_of, respond

Handler = Callable[[Request], Awaitable[Response]]
REALM = 'Bearer realm="emqlab-instructor"'
LEARNER = "that is the instructor's: a learner of a class cannot use it (the instructor signs in at /instructor)"


def flash_of(request: Request) -> str | None:
    found = request.app.state.flash_cookie.read(request)
    return found if isinstance(found, str) else None


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    """A page of ours: the course's frame, the one-shot notice shown once."""
    flash = flash_of(request)
    response = respond(request, template, {"course": course_of(request), "flash": flash, "error": None,
                                           "page": None, "current_hub": None, **context}, status)
    if flash is not None or request.cookies.get(request.app.state.flash_cookie.name):
        request.app.state.flash_cookie.clear(response)
    if status == 401:
        response.headers["WWW-Authenticate"] = REALM
    return response


def done(request: Request, message: str, data: dict[str, Any] | None = None, status: int = 200,
         back: str = "/instructor") -> Response:
    """A change made: JSON for a script, a 303 back to the page with a notice for a form."""
    if wants_json(request):
        return JSONAnswer({"ok": True, "message": message, **(data or {})}, status_code=status)
    response = RedirectResponse(back, status_code=303)
    request.app.state.flash_cookie.attach(response, message)
    return response


def status_of(exc: Exception) -> tuple[int, str, dict[str, str] | None]:
    """A failure's status, sentence and headers (our own refusals first, then the site's rules)."""
    if isinstance(exc, BadRoom | BadName):
        return 400, str(exc), None
    if isinstance(exc, RoomsFull):
        return 409, str(exc), None
    answer = answer_error(exc)
    said = msgspec.json.decode(answer.body, type=dict[str, Any]).get("error", "")
    headers = {"Retry-After": answer.headers["retry-after"]} if "retry-after" in answer.headers else None
    return answer.status_code, str(said), headers


def refused(request: Request, exc: Exception, back: str = "/instructor") -> Response:
    """A refusal in words: JSON, or the instructor's page with the sentence (and a way back)."""
    status, message, headers = status_of(exc)
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": REALM}
    if wants_json(request) or (request.method == "GET" and request.url.path.endswith((".json", ".csv", "/events"))):
        return JSONAnswer({"error": message}, status_code=status, headers=headers)
    settings = request.app.state.settings
    return render(request, "instructor.html", {
        "enabled": bool(settings.instructor_token), "signed_in": guards.is_instructor(request),
        "error": message, "back": back, "ephemeral": settings.ephemeral, "overview": None}, status)


async def guarded(request: Request, handler: Handler, back: str = "/instructor") -> Response:
    """Run an instructor's endpoint: the instructor's guard first, every failure a clear 4xx (or 503)."""
    try:
        try:
            await guards.require_instructor(request)
        except guards.Refused as exc:
            if exc.status == 401 and guards.bearer_of(request) is None and member(request):
                raise guards.Refused(403, LEARNER) from exc
            raise
        return await handler(request)
    except Exception as exc:  # noqa: BLE001 - every failure is answered in words (status_of)
        return refused(request, exc, back)


def member(request: Request) -> bool:
    """A class's learner (a room cookie this site signed): they are refused, not asked to sign in."""
    return isinstance(request.app.state.room_cookie.read(request), str)


def instructor_only(handler: Handler) -> Handler:
    """`handler` run `guarded`."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        back = f"/instructor/rooms/{request.path_params['code']}" if "code" in request.path_params else "/instructor"
        return await guarded(request, handler, back)

    return endpoint
