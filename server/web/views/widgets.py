"""The widget API: read a widget's snapshot, run one of its actions.

A click travels: the guards, the body typed, `runner.act` (lock, action,
verdict, record), and back; the page repaints from the stream.
"""

from __future__ import annotations

import functools

import msgspec
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from server.sandboxes import admission
from server.web import bodies, guards
from server.web.answer import JSONAnswer
from server.web.errors import answered, problem
from server.web.rates import client_address
from server.widgets import runner
from server.widgets.base import Widget
from server.widgets.turn import Actor


def routes() -> list[BaseRoute]:
    return [Route("/api/widgets/{widget}/state", state, methods=["GET"]),
            Route("/api/widgets/{widget}/{action}", act, methods=["POST"])]


def find(request: Request) -> Widget:
    name = request.path_params["widget"]
    found = request.app.state.lab.catalog.widgets.get(name)
    if found is None:
        raise LookupError(f"no widget named {name[:40]!r}")
    return found  # type: ignore[no-any-return]


def actor(entry: guards.Entry) -> Actor:
    ask = (entry.ask.widget, entry.ask.question, entry.ask.step, entry.ask.round) if entry.ask else None
    return Actor(entry.sandbox, entry.visitor, "instructor" if entry.instructor else "learner", entry.name,
                 entry.tab, entry.room, ask)


def admitter(request: Request, sandbox: str, used: bool) -> runner.Admit:
    """The admission a first landing needs (the site's cap, this address's share)."""
    settings = request.app.state.settings
    limits = admission.Limits(settings.max_sandboxes, settings.address_sandboxes, settings.unused_idle)
    return functools.partial(admission.admit_or_refuse, request.app.state.conn, sandbox, limits,
                             client_address(request), used)


@answered
async def state(request: Request) -> JSONAnswer:
    widget = find(request)
    entry = await guards.enter(request, write=False, counts="reads")
    snap = await runner.show(request.app.state.lab, widget, actor(entry),
                             admitter(request, entry.sandbox, used=False))
    return JSONAnswer({"snapshot": snap, **entry.where()})


@answered
async def act(request: Request) -> JSONAnswer:
    widget = find(request)
    found = widget.actions.get(request.path_params["action"])
    if found is None:
        return problem(404, f"widget {widget.name!r} has no action {request.path_params['action'][:40]!r}; "
                            f"known: {', '.join(sorted(widget.actions))}")
    entry = await guards.enter(request, write=True)
    body = await bodies.read(request, found.body)
    acted = await runner.act(request.app.state.lab, widget, actor(entry), found.slug, body,
                             admitter(request, entry.sandbox, used=True))
    return JSONAnswer({**msgspec.structs.asdict(acted), **entry.where()})
