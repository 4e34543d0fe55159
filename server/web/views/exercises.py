"""The exercises' endpoints: read one, and run a learner's script through its checks.

A run passes the guards an action passes, then the grader (server/exercises/): the script never runs
on the site's Valkey. With `Accept: text/event-stream` it streams its place in the line, then its result.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Mapping
from typing import Annotated, Any, NamedTuple

import msgspec
from markupsafe import Markup
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.emq.script import execute
from server.exercises import Graded, GradeRefused, catalogue, grade
from server.live.streams import frame
from server.sandboxes import progress
from server.web import bodies, guards
from server.web.errors import JSONAnswer, dumps
from server.web.services import services
from server.web.templating import respond
from server.web.views.widgets import admitter

# A script of 16,384 bytes may need six bytes of JSON per byte (\u escapes).
BODY_CAP = 6 * 16_384 + 1024
BEST = re.compile(r"<!--emqlab-best:([a-z0-9-]+)-->")  # where a dive's exercise draws the visitor's best run


class Run(msgspec.Struct, forbid_unknown_fields=True):
    script: Annotated[str, msgspec.Meta(max_length=BODY_CAP)]


async def _mine(request: Request) -> tuple[catalogue.Exercise, progress.Mine]:
    """The exercise, and the visitor's own work on it (last script, best run)."""
    entry = await guards.enter(request, write=False, counts="reads")
    exercise = catalogue.get(request.path_params["name"])
    return exercise, await progress.mine(services(request).conn, entry.visitor, exercise.name)


async def describe(request: Request) -> Response:
    exercise, mine = await _mine(request)
    return JSONAnswer({**exercise.as_json(), "mine": mine.as_json()})


class Ran(NamedTuple):
    graded: Graded
    best: tuple[int, int] | None  # the best run the record holds now, this one counted
    known: bool  # False: the record did not answer (of the wrong type), so the best is not known


async def _graded(request: Request, entry: guards.Entry, script: str,
                  places: asyncio.Queue[int] | None = None) -> Ran:
    """Grade, then keep the result in the learner's record (record.lua never lowers a best, and answers
    the record) and the script as their last (server/sandboxes/progress.py)."""
    name = request.path_params["name"]
    graded = await grade(services(request).graders, name, script, run_for=entry.visitor,
                         on_place=places.put_nowait if places is not None else None,
                         address=guards.client_address(request))
    step = progress.Step(f"ex:{name}", result=f"{graded.passed}/{graded.total}")
    settings = services(request).settings
    ttl = settings.sandbox_ttl * 2
    script_, keys, args = progress.record_call(entry.visitor, step, ttl, int(time.time() * 1000))
    async with services(request).conn.pipeline(transaction=False) as pipe:
        script_.queue(pipe, keys, args)
        progress.keep_work(pipe, entry.visitor, name, script, ttl)
        # each check of the latest run, for the class page ("which check most of the class fails")
        pipe.hset(keys[1], mapping={f"ex:{name}:{c.name}": int(c.passed) for c in graded.checks})
        record = (await execute(services(request).conn, pipe, [(script_, keys, args), None, None, None]))[0]
    known = not isinstance(record, Exception)
    return Ran(graded, progress.exercise_best(progress.fields_of(record), name), known)


def best_line(request: Request, name: str, best: tuple[int, int] | None, known: bool = True) -> str:
    """The learner's best run, as every place draws it (widgets/_exercise_best.html), for a dive's widget."""
    return services(request).templates.get_template("widgets/_exercise_best.html").render(
        name=name, best=best, known=known, own=False)


def fill_best(request: Request, body: Markup, bests: Mapping[str, tuple[int, int] | None] | None) -> Markup:
    """A dive's body (cached for every visitor) with each exercise's best run drawn for this one;
    `bests` None: their record cannot be read now, and the line says only where the work is kept."""
    return Markup(BEST.sub(lambda m: best_line(request, m.group(1), (bests or {}).get(m.group(1)),
                                               bests is not None), body))


async def run(request: Request) -> Response:
    entry = await guards.enter(request, write=True)
    body = bodies.decode(await bodies.raw(request, BODY_CAP), Run)
    # a run writes the learner's record: their sandbox is admitted first, as before a widget's action
    await admitter(request, entry.visitor, used=True)()
    if "text/event-stream" in request.headers.get("accept", ""):
        return EventSourceResponse(_streamed(request, entry, body.script), send_timeout=10)
    return JSONAnswer((await _graded(request, entry, body.script)).graded.as_json())


async def _streamed(request: Request, entry: guards.Entry, script: str) -> AsyncIterator[bytes]:
    places: asyncio.Queue[int] = asyncio.Queue()
    task = asyncio.create_task(_graded(request, entry, script, places))
    while not task.done():
        getter = asyncio.ensure_future(places.get())
        done, _ = await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            place = getter.result()
            said = f"Waiting for a grader: {place} ahead of you." if place > 0 else "A grader is running your checks…"
            yield frame("place", dumps({"place": place, "said": said}))
        else:
            getter.cancel()
    try:
        ran = task.result()
        # the checks and the best run as the exercise's own page draws them (one drawing), beside the JSON's fields
        best = best_line(request, request.path_params["name"], ran.best, ran.known)
        yield frame("result", dumps({**ran.graded.as_json(), "html": _results(request, graded=ran.graded),
                                     "best_html": best, "summary": ran.graded.summary}))
    except GradeRefused as exc:  # every check "not run", as the page without JavaScript says it
        html = _results(request, refused=exc.status, exercise=catalogue.EXERCISES.get(request.path_params["name"]))
        yield frame("error", dumps({**exc.as_json(), "status": exc.status, "html": html}))


def _results(request: Request, **context: Any) -> str:
    return services(request).templates.get_template("widgets/_exercise_results.html").render(**context)


async def page(request: Request) -> Response:
    """An exercise on a page of its own (no JavaScript needed): the visitor's last script, and their best run."""
    exercise, mine = await _mine(request)
    return _page(request, exercise, mine.script or exercise.starter, best=mine.best)


def _page(request: Request, exercise: catalogue.Exercise, script: str, status: int = 200, **context: Any) -> Response:
    return respond(request, "exercise.html", {"exercise": exercise, "script": script, "graded": None, "error": None,
                                              "refused": None, "best": None, "known": True,
                                              "dive": services(request).course.page(exercise.page), **context}, status)


async def run_form(request: Request) -> Response:
    """A form's run (no JavaScript): the results as a page."""
    entry = await guards.enter(request, write=True)
    # read whole in memory up to the cap, never by Starlette's form parser (its multipart spools parts
    # to disk, 2 GB in 4 s): past the cap 413, multipart 415, unknown fields 400, before anything runs
    script = (await bodies.read_form(request, Run, cap=BODY_CAP)).script
    exercise = catalogue.get(request.path_params["name"])
    await admitter(request, entry.visitor, used=True)()
    try:
        ran = await _graded(request, entry, script)
        return _page(request, exercise, script, graded=ran.graded, best=ran.best, known=ran.known)
    except GradeRefused as exc:
        return _page(request, exercise, script, exc.status, error=exc.message, refused=exc.status)


def routes() -> list[BaseRoute]:
    return [Route("/api/exercises/{name}", describe, methods=["GET"]),
            Route("/api/exercises/{name}/run", run, methods=["POST"]),
            Route("/exercises/{name}", page, methods=["GET"]),
            Route("/exercises/{name}/run", run_form, methods=["POST"])]
