"""Results to take away: a class's roster as results.csv, its answers as answers.json.

Read live while the class is open; kept as they stood when it closes
(server/sandboxes/kept.py) for `settings.results_days` days.
"""

from __future__ import annotations

import csv
import io
import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.sandboxes import kept, rooms
from server.sandboxes.roster import Learner
from server.web import guards
from server.web.answer import dumps
from server.web.views import class_state
from server.web.views.class_state import ClassState
from server.web.views.replies import instructor_only

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds)) if seconds else ""


def cell(text: str) -> str:
    """A learner's name cannot run as a formula in the instructor's spreadsheet."""
    return "'" + text if text.startswith(FORMULA) else text


def pages_of(request: Request, row: Learner) -> list[str]:
    worked = {r.widget for r in row.records}
    return [d.path for d in request.app.state.course.dives if worked & set(d.widgets)]


def csv_text(request: Request, state: ClassState) -> str:
    widgets = list(request.app.state.catalog.widgets)
    exercises = sorted({name for row in state.learners for name in row.exercises})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["name", "joined", "pages", *(f"{w} steps" for w in widgets), "predictions asked",
                     "predictions right", *(f"{e} checks passed" for e in exercises), "last seen"])
    for row in state.learners:
        reached = {r.widget: len(r.reached) for r in row.records}
        writer.writerow([cell(row.name), when(row.joined), " ".join(pages_of(request, row)),
                         *(reached.get(w, 0) for w in widgets), row.asked, row.right,
                         *(row.exercises[e][0] if e in row.exercises else "" for e in exercises),
                         when(row.last_seen)])
    return out.getvalue()


def answers_text(state: ClassState) -> str:
    return dumps({"code": state.room.code, "questions": [c.contract() for c in state.counted]}).decode()


async def texts(request: Request) -> tuple[str, str, str]:
    """(code, csv, answers.json) of an open class now, or of a closed one as kept."""
    code = rooms.normalize_code(request.path_params["code"])
    room = await rooms.get(request.app.state.conn, code)
    if room is not None:
        state = await class_state.read(request, room)
        return code, csv_text(request, state), answers_text(state)
    found = await kept.find(request.app.state.conn, code)
    if found is None:
        days = request.app.state.settings.results_days
        raise guards.Refused(404, f"no open class has the code {code}, and no class closed in the last "
                                  f"{days} days kept results under it")
    return code, found.csv, found.answers


async def keep(request: Request, room: rooms.Room) -> None:
    state = await class_state.read(request, room)
    await kept.keep(request.app.state.conn, room.code, room.name, csv_text(request, state), answers_text(state),
                    request.app.state.settings.results_days)


@instructor_only
async def results_csv(request: Request) -> Response:
    code, text, _ = await texts(request)
    return Response(text, media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="class-{code}-results.csv"'})


@instructor_only
async def answers_json(request: Request) -> Response:
    _, _, text = await texts(request)
    return Response(text, media_type="application/json")


def routes() -> list[BaseRoute]:
    base = "/instructor/rooms/{code}"
    return [Route(f"{base}/results.csv", results_csv, methods=["GET"]),
            Route(f"{base}/answers.json", answers_json, methods=["GET"])]
