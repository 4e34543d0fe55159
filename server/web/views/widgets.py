"""The widget API: a snapshot (JSON), the actions, and a page's first paint (its live stream: `stream`).

A click travels: the guards, the body typed, `runner.act`, and back.
"""

from __future__ import annotations

import asyncio
import functools

import msgspec
from markupsafe import Markup
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from server.refusal import Refusal
from server.sandboxes import admission
from server.web import bodies, guards
from server.web.errors import FAULTS, JSONAnswer, is_fault
from server.web.guards import client_address
from server.web.services import services
from server.web.templating import MARKER
from server.widgets import runner, specimen
from server.widgets.base import Widget
from server.widgets.snapshot import Snapshot
from server.widgets.turn import Actor, Busy

READ_DEADLINE = 8.0  # seconds a first showing may take (landing included) before the stream says so


def routes() -> list[BaseRoute]:
    return [Route("/api/widgets/{widget}/state", state, methods=["GET"]),
            Route("/api/widgets/{widget}/{action}", act, methods=["POST"])]


def find(request: Request) -> Widget:
    name = request.path_params["widget"]
    found = services(request).lab.catalog.widgets.get(name)
    if found is None:
        raise Refusal(f"no widget named {name[:40]!r}", status=404)
    return found


def actor(entry: guards.Entry) -> Actor:
    ask = (entry.ask.widget, entry.ask.question, entry.ask.step, entry.ask.round) if entry.ask else None
    return Actor(entry.sandbox, entry.visitor, "instructor" if entry.instructor else "learner", entry.name,
                 entry.tab, entry.room, ask, veiled=bool(entry.ask and entry.ask.veils(entry.mode)), mode=entry.mode)


def door(request: Request) -> admission.Door:
    """The one admission every door into a sandbox passes (a widget, the console, an exercise):
    the site's cap and this address's share."""
    settings = services(request).settings
    limits = admission.Limits(settings.max_sandboxes, settings.address_sandboxes, settings.unused_idle)
    return admission.Door(limits, client_address(request))


def admitter(request: Request, sandbox: str, used: bool) -> runner.Admit:
    """The admission a first landing needs."""
    return functools.partial(door(request).enter, services(request).conn, sandbox, used)


async def state(request: Request) -> JSONAnswer:
    widget = find(request)
    entry = await guards.enter(request, write=False, counts="reads")
    snap = await runner.show(services(request).lab, widget, actor(entry),
                             admitter(request, entry.sandbox, used=False))
    return JSONAnswer({"snapshot": snap, **entry.where()})


async def act(request: Request) -> JSONAnswer:
    widget = find(request)
    found = widget.actions.get(request.path_params["action"])
    if found is None:
        raise guards.Refused(404, f"widget {widget.name!r} has no action {request.path_params['action'][:40]!r}; "
                                  f"known: {', '.join(sorted(widget.actions))}")
    entry = await guards.enter(request, write=True)
    body = await bodies.read(request, found.body)
    acted = await runner.act(services(request).lab, widget, actor(entry), found.slug, body,
                             admitter(request, entry.sandbox, used=True))
    return JSONAnswer({**msgspec.structs.asdict(acted), **entry.where()})


async def fill(request: Request, body: Markup) -> Markup:
    """A page body with each widget marker replaced by the widget drawn from a snapshot read now: the
    visitor's own, or the specimen's opening scenario at `ver` 0 (which the stream's first frame
    replaces) for a sandbox not live. A widget that cannot be read now is drawn empty; its stream
    fills it (or says why). Each sandbox's widgets are read in one round trip."""
    names = MARKER.findall(body)
    if not names:
        return body
    lab, drawing = services(request).lab, services(request).drawing
    widgets = [lab.catalog.widgets[name] for name in dict.fromkeys(names)]
    try:
        # no budget spent: the page and the stream it opens are one showing, and the stream counts it
        entry = await guards.enter(request, write=False, counts="")
    except guards.Refused:
        entry = None
    # a visit without a valid sandbox cookie (the middleware just named one: a first visit, a crawler, a
    # flood's client) registers no sandbox (docs/LIMITS.md); it lands when its stream opens or it acts
    new_visitor = "sandbox" in request.scope.get("state", {})
    drawn: dict[str, str] = {}
    if entry is not None and not (new_visitor and entry.sandbox == entry.visitor):
        mine = await snapshots_of(lab, widgets, actor(entry), admitter(request, entry.sandbox, used=False))
        for name, snap in mine.items():
            drawn[name] = services(request).frames.html(entry.sandbox, name, snap) if snap is not None else \
                drawing.html(lab.catalog.widgets[name], None)
    for name, snap in (await snapshots_of(lab, [w for w in widgets if w.name not in drawn], specimen.OWNER)).items():
        drawn[name] = drawing.html(lab.catalog.widgets[name], specimen.shown(snap) if snap is not None else None)
    return Markup(MARKER.sub(lambda m: drawn[m.group(1)], body))


async def snapshots_of(lab: runner.Lab, widgets: list[Widget], who: Actor,
                 admit: runner.Admit | None = None) -> dict[str, Snapshot | None]:
    """Each widget's snapshot in `who`'s sandbox: the landed ones read in one round trip, the others
    landed first. None: not readable now (Valkey away or busy, a landing still under way, a refused
    admission): drawn empty, its stream fills it. Left out: no room for the sandbox now (admission.Full),
    so the specimen draws it."""
    if not widgets:
        return {}
    try:
        async with asyncio.timeout(READ_DEADLINE):
            found = await runner.show_all(lab, widgets, who.sandbox)
    except FAULTS as exc:
        if not _drawn_empty(exc):
            raise
        return dict.fromkeys([w.name for w in widgets], None)
    shown: dict[str, Snapshot | None] = {}
    for widget in widgets:
        try:
            async with asyncio.timeout(READ_DEADLINE):
                shown[widget.name] = found[widget.name] if widget.name in found else \
                    await runner.show(lab, widget, who, admit)
        except admission.Full:
            continue
        except FAULTS as exc:
            if not _drawn_empty(exc):
                raise
            shown[widget.name] = None
    return shown


def _drawn_empty(exc: BaseException) -> bool:
    """Valkey away or busy, a landing still under way, a refused admission: the page still renders, the
    widget drawn empty; anything else is raised. TimeoutError is an OSError."""
    return is_fault(exc) or isinstance(exc, (TimeoutError, Busy, guards.Refused))
