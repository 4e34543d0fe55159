"""The learner's progress: `/progress`, its "Start over", and the same as JSON.

    GET  /progress             every dive, each widget's tour steps reached and predictions
    POST /progress/start-over  forget it all and land every scenario afresh (Origin-checked)
    GET  /api/progress         the same record as JSON, for the live pages

The record is `lab:{<sandbox>}:progress` (`server/sandboxes/progress.py`), for
the sandbox the request acts in. `dive_progress` is also what the index, the
hubs and the dives show beside their links; with Valkey away they show none.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from server.sandboxes import lifecycle, progress
from server.sandboxes.progress import DiveProgress
from server.sandboxes.sandbox import NoSandbox
from server.web import guard
from server.web.answer import JSONAnswer
from server.web.state import course_of, respond
from server.widgets import WIDGETS

log = logging.getLogger("emqlab.progress")
VALKEY_AWAY = (RedisError, OSError)


def _dives(request: Request) -> list[Any]:
    course = course_of(request)
    return [d for hub in course.hubs for d in hub.dives]


async def course_progress(request: Request) -> list[DiveProgress]:
    """Every dive of the course with the record of the sandbox this request acts in."""
    found = await progress.read(request.app.state.conn, guard.sandbox_of(request))
    steps = {name: len(w.tour) for name, w in WIDGETS.items()}
    return [progress.for_dive(d.path, d.title, [n for n in d.widgets if n in WIDGETS], steps, found)
            for d in _dives(request)]


async def dive_progress(request: Request) -> dict[str, DiveProgress] | None:
    """Each dive's progress by path, for the pages; None when it cannot be read
    (Valkey away, or an app that serves the pages without a Valkey or sandboxes)."""
    if getattr(request.app.state, "conn", None) is None or not guard.noted(request, "sandbox", None):
        return None
    try:
        return {d.path: d for d in await course_progress(request)}
    except (guard.Refused, NoSandbox, *VALKEY_AWAY):
        return None


async def page(request: Request) -> Response:
    dives = await dive_progress(request)
    titles = {name: w.title for name, w in WIDGETS.items()}
    context = {"dives": list(dives.values()) if dives is not None else None, "titles": titles,
               "course": course_of(request), "page": None, "current_hub": None}
    status = 200 if dives is not None else 503
    response: Response = respond(request, "progress.html", context, status)
    return response


async def start_over(request: Request) -> Response:
    """Forget the record, and the scenarios with it, so the course starts again."""
    try:
        guard.check_origin(request)
        guard.check_demo(request)
        sandbox = guard.sandbox_of(request)
        await lifecycle.reset_sandboxes(request.app.state.conn, [sandbox], by="learner")
        await progress.clear(request.app.state.conn, sandbox)
    except guard.Refused as exc:
        return JSONAnswer({"error": str(exc)}, status_code=exc.status)
    except NoSandbox as exc:
        return JSONAnswer({"error": str(exc)}, status_code=403)
    except VALKEY_AWAY:
        return JSONAnswer({"error": "Valkey is unreachable right now; nothing was changed. Try again shortly."},
                            status_code=503, headers={"Retry-After": "2"})
    return RedirectResponse("/progress", status_code=303)


async def as_json(request: Request) -> Response:
    try:
        dives = await course_progress(request)
    except guard.Refused as exc:
        return JSONAnswer({"error": str(exc)}, status_code=exc.status)
    except NoSandbox as exc:
        return JSONAnswer({"error": str(exc)}, status_code=403)
    except VALKEY_AWAY:
        return JSONAnswer({"error": "Valkey is unreachable right now."}, status_code=503,
                            headers={"Retry-After": "2"})
    widgets = {w.widget: w.as_json() for d in dives for w in d.widgets}
    return JSONAnswer({"dives": [d.as_json() for d in dives], "widgets": widgets})


def routes() -> list[Route]:
    return [
        Route("/progress", page, methods=["GET"], name="progress"),
        Route("/progress/start-over", start_over, methods=["POST"]),
        Route("/api/progress", as_json, methods=["GET"]),
    ]
