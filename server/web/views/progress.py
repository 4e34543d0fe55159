"""The learner's own progress (also in a class): `/progress`, "Start over", and the same as JSON."""

from __future__ import annotations

from typing import Any

import msgspec
from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from server.exercises import catalogue
from server.lifecycle import resets
from server.sandboxes import progress
from server.sandboxes.progress import WidgetProgress
from server.web import guards
from server.web.answer import JSONAnswer
from server.web.errors import answered
from server.web.templating import course_of, respond


class DiveProgress(msgspec.Struct):
    path: str
    title: str
    widgets: list[WidgetProgress]
    exercises: list[dict[str, Any]] = []

    @property
    def done(self) -> int:
        return sum(w.done for w in self.widgets)

    @property
    def summary(self) -> str:
        total = len(self.widgets)
        said = f"{self.done} of {total} widget{'' if total == 1 else 's'} done"
        asked, right = sum(w.asked for w in self.widgets), sum(w.right for w in self.widgets)
        return said + (f", {right} of {asked} prediction{'' if asked == 1 else 's'} right" if asked else "")


async def course_progress(request: Request, visitor: str) -> list[DiveProgress]:
    fields = await progress.read(request.app.state.conn, visitor)
    catalog = request.app.state.catalog
    dives = []
    for dive in course_of(request).dives:
        found = [catalog.widgets[n] for n in dive.widgets if n in catalog.widgets]
        exercises = [{"name": ex.name, "title": ex.title, "best": progress.exercise_best(fields, ex.name)}
                     for ex in (catalogue.get(n) for n in catalogue.names()) if ex.page == dive.path]
        dives.append(DiveProgress(dive.path, dive.title,
                                  [progress.of_widget(fields, w.name, [s.id for s in w.tour]) for w in found],
                                  exercises))
    return dives


async def dive_progress(request: Request) -> dict[str, DiveProgress] | None:
    """Each dive's progress by path, for the pages; None when it cannot be read."""
    try:
        visitor = guards.visitor_of(request)
        return {d.path: d for d in await course_progress(request, visitor)}
    except (guards.Refused, RedisError, OSError):
        return None


async def page(request: Request) -> Response:
    dives = await dive_progress(request)
    done = request.query_params.get("done") == "start-over"
    context = {"dives": list(dives.values()) if dives is not None else None,
               "titles": {n: w.title for n, w in request.app.state.catalog.widgets.items()},
               "started_over": done, "confirming": request.query_params.get("confirm") == "start-over"}
    return respond(request, "progress.html", context, 200 if dives is not None else 503)


@answered
async def start_over(request: Request) -> Response:
    """Forget the record and land every scenario afresh, once confirmed."""
    entry = await guards.enter(request, write=True)
    form = await request.form()
    if form.get("confirm") != "yes":
        return RedirectResponse("/progress?confirm=start-over", status_code=303)
    await resets.reset_sandboxes(request.app.state.lab, [entry.visitor], by="learner")
    await progress.clear(request.app.state.conn, entry.visitor)
    return RedirectResponse("/progress?done=start-over", status_code=303)


@answered
async def as_json(request: Request) -> Response:
    entry = await guards.enter(request, write=False, counts="reads")
    dives = await course_progress(request, entry.visitor)
    widgets = {w.widget: w for d in dives for w in d.widgets}
    return JSONAnswer({"dives": [{**msgspec.structs.asdict(d), "summary": d.summary} for d in dives],
                       "widgets": widgets})


def routes() -> list[BaseRoute]:
    return [Route("/progress", page, methods=["GET"], name="progress"),
            Route("/progress/start-over", start_over, methods=["POST"]),
            Route("/api/progress", as_json, methods=["GET"])]
