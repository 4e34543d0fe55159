"""HTML pages: the course index, the hubs, the dives, the 404 and error pages, and the learner's progress.

A page body does not depend on the visitor: each is rendered once, kept in the services' `page_bodies`,
and framed with the visitor's progress. `routes()` match any one- or two-part path: mount them last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from markupsafe import Markup
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Route

from server.content import Page
from server.exercises import catalogue
from server.lifecycle import resets
from server.refusal import Refusal
from server.sandboxes import progress
from server.sandboxes.progress import WidgetProgress
from server.web import bodies, errors, guards
from server.web.errors import JSONAnswer
from server.web.services import services
from server.web.templating import respond
from server.web.views import class_box, exercises, widgets
from server.widgets.flow import plural


async def _render(request: Request, template: str, page: Page | None, status: int = 200, **extra: Any) -> Response:
    context: dict[str, Any] = {"page": page, "body": Markup(""), "scripts": [], "current_hub": None}
    if page is not None:
        cache, catalog = services(request).page_bodies, services(request).catalog
        if page.path not in cache:
            cache[page.path] = page.render_body(services(request).render_widget)
        shown = extra.get("progress")  # a dive's exercises draw the visitor's best run (None: not known now)
        bests = {e["name"]: e["best"] for e in shown[page.path].exercises} if shown and page.path in shown else None
        context["body"] = exercises.fill_best(request, await widgets.fill(request, cache[page.path]), bests)
        # lab.js draws nothing: it morphs the server's frames in; what is not a widget has its own script
        context["scripts"] = sorted({"lab" if name in catalog.widgets else name for name in page.widgets})
        context["current_hub"] = page.path if page.kind == "hub" else (
            page.hub.path if page.kind == "dive" and page.hub is not None else None)
    return respond(request, template, {**context, **extra}, status)


async def page_at(request: Request) -> Response:
    """The index (/), a hub (/{hub}) or a dive (/{hub}/{slug}): the page at exactly this path, of the kind
    its route says."""
    kind = "dive" if "slug" in request.path_params else "hub" if "hub" in request.path_params else "index"
    page = services(request).course.page(request.url.path)
    if page is None or page.kind != kind or page.path != request.url.path:
        raise HTTPException(status_code=404)
    # a dive draws its class's banner and question box (the same drawing GET /room/ask gives room.js)
    box = await class_box.shown_on(request, page.path) if kind == "dive" else None
    return await _render(request, f"{kind}.html", page, progress=await dive_progress(request), box=box)


async def not_found(request: Request, exc: Exception) -> Response:
    detail = getattr(exc, "detail", "Not Found")
    if not errors.wants_page(request):
        return JSONAnswer({"error": detail}, status_code=404)
    return await _render(request, "404.html", None, status=404)


async def refused(request: Request, refusal: Refusal) -> Response:
    """The site's error page for a browser's request (the app's handlers call it): the refusal's sentence
    at its status, in the site's layout; a key of the wrong type offers Start over, which clears it."""
    wrong_type = isinstance(refusal, errors.WrongType)
    response = await _render(request, "error.html", None, status=refusal.status, code=refusal.status,
                             message=getattr(refusal, "on_page", refusal.message), start_over=wrong_type)
    if refusal.retry_after is not None:
        response.headers["Retry-After"] = str(refusal.retry_after)
    return response


FAVICON = Path(__file__).resolve().parents[3] / "site" / "static" / "favicon.svg"


async def favicon(request: Request) -> Response:
    """Browsers ask for /favicon.ico whatever the page says."""
    return FileResponse(FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})


class DiveProgress(msgspec.Struct):
    path: str
    title: str
    widgets: list[WidgetProgress]
    exercises: list[dict[str, Any]] = []

    @property
    def summary(self) -> str:
        said = f"{sum(w.done for w in self.widgets)} of {plural(len(self.widgets), 'widget')} done"
        asked, right = sum(w.asked for w in self.widgets), sum(w.right for w in self.widgets)
        return said + (f", {right} of {plural(asked, 'prediction')} right" if asked else "")


async def course_progress(request: Request, visitor: str) -> list[DiveProgress]:
    fields = await progress.read(services(request).conn, visitor)
    catalog = services(request).catalog
    dives = []
    for dive in services(request).course.dives:
        found = [catalog.widgets[n] for n in dive.widgets if n in catalog.widgets]
        exercises = [{"name": ex.name, "title": ex.title, "best": progress.exercise_best(fields, ex.name)}
                     for ex in (catalogue.get(n) for n in catalogue.names()) if ex.page == dive.path]
        dives.append(DiveProgress(dive.path, dive.title,
                                  [progress.of_widget(fields, w.name, [s.id for s in w.tour]) for w in found],
                                  exercises))
    return dives


async def dive_progress(request: Request) -> dict[str, DiveProgress] | None:
    """Each dive's progress by path, for the pages; None when Valkey cannot read it now. A record of the
    wrong type is not hidden: the handlers say it and offer Start over, as on a dive and on /progress."""
    try:
        return {d.path: d for d in await course_progress(request, guards.visitor_of(request))}
    except (guards.Refused, RedisError, OSError) as exc:
        if isinstance(errors.refusal_of(exc), errors.WrongType):
            raise
        return None


async def progress_page(request: Request) -> Response:
    """The record itself, so what keeps it from being read is the handlers' to say (`errors.refusal_of`),
    not a guess: Valkey away or busy a 503 to retry, a record of the wrong type a 409 offering Start over."""
    dives = await course_progress(request, guards.visitor_of(request))
    done = request.query_params.get("done") == "start-over"
    context = {"dives": dives, "titles": {n: w.title for n, w in services(request).catalog.widgets.items()},
               "started_over": done, "confirming": request.query_params.get("confirm") == "start-over"}
    return respond(request, "progress.html", context)


class StartOver(msgspec.Struct, forbid_unknown_fields=True):
    confirm: str = ""


async def start_over(request: Request) -> Response:
    """Forget the record and land every scenario afresh, once confirmed. The form is read as every
    action's body is (`bodies.read_form`): capped, in memory, a multipart body refused unparsed."""
    entry = await guards.enter(request, write=True)
    if (await bodies.read_form(request, StartOver)).confirm != "yes":
        return RedirectResponse("/progress?confirm=start-over", status_code=303)
    await resets.reset_sandboxes(services(request).lab, [entry.visitor], by="learner")
    await progress.clear(services(request).conn, entry.visitor)
    return RedirectResponse("/progress?done=start-over", status_code=303)


async def progress_json(request: Request) -> Response:
    entry = await guards.enter(request, write=False, counts="reads")
    dives = await course_progress(request, entry.visitor)
    widgets = {w.widget: w for d in dives for w in d.widgets}
    return JSONAnswer({"dives": [{**msgspec.structs.asdict(d), "summary": d.summary} for d in dives],
                       "widgets": widgets})


def routes() -> list[Route]:
    return [
        Route("/progress", progress_page, methods=["GET"], name="progress"),
        Route("/progress/start-over", start_over, methods=["POST"]),
        Route("/api/progress", progress_json, methods=["GET"]),
        Route("/favicon.ico", favicon, name="favicon"),
        Route("/", page_at, name="index"),
        Route("/{hub:str}", page_at, name="hub"),
        Route("/{hub:str}/{slug:str}", page_at, name="dive"),
    ]
