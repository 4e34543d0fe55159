"""The widget API: one endpoint reads a widget's state, one runs its actions.

    GET  /api/widgets/<widget>/state      land the scenario if new, return the snapshot
    POST /api/widgets/<widget>/<action>   run one action, return what it did and the snapshot

Every answer is JSON. Bad input is a 4xx with a sentence saying what was wrong,
and nothing is written; Valkey being away is a 503 the widget shows.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from server.emq import pipeline
from server.live import answers
from server.sandboxes import progress
from server.web import body, entry, guard
from server.web.answer import JSONAnswer
from server.web.errors import VALKEY_DOWN, answer_error, problem
from server.widgets import WIDGETS, attempt
from server.widgets.base import Context, Widget

__all__ = ["VALKEY_DOWN", "act", "answer_error", "problem", "state"]  # the mapper lives in web/errors.py


def find_widget(request: Request) -> Widget:
    name = request.path_params["widget"]
    widget = WIDGETS.get(name)
    if widget is None:
        raise LookupError(f"no widget named {name!r}; known: {', '.join(sorted(WIDGETS))}")
    return widget


async def read_body(request: Request) -> dict[str, Any]:
    """The action's JSON body, read up to the cap and checked (server/web/body.py)."""
    settings = request.app.state.settings
    parsed = await body.read_json(request, settings.max_body_bytes)
    return body.check(parsed, settings.max_payload_bytes)


async def state(request: Request) -> JSONAnswer:
    try:
        widget = find_widget(request)
        sandbox = guard.sandbox_of(request)
        ctx = context(request, sandbox)
        # the activity record rides with the snapshot's read (one round trip in all, once admitted)
        ctx.before = await entry.glance(request, sandbox, widget.name)
        snap = await widget.show(ctx)
        if ctx.before:  # a widget whose read did not take them (its own snapshot)
            await pipeline.send(ctx.conn, ctx.before)
        return JSONAnswer({"snapshot": snap, **where(request)})
    except Exception as exc:  # noqa: BLE001 - every failure becomes a clear JSON answer
        return answer_error(exc)


def context(request: Request, sandbox: str) -> Context:
    """The widget's context: the sandbox, who acts, and from which page."""
    tab = "".join(ch for ch in request.headers.get("x-emqlab-tab", "")[:32] if ch.isalnum())
    by = "instructor" if guard.is_instructor(request) else "learner"
    return Context(request.app.state.conn, sandbox, by=by, tab=tab)


def where(request: Request) -> dict[str, Any]:
    """The class (or the Watch) the answer comes from, if any: the page says so
    and, where it only watches, disables its controls."""
    watching = guard.noted(request, "watching", None)
    if watching:
        return {"room": {"watching": watching, "readonly": True, "mode": "watch"}}
    room = guard.room_of(request)
    if room is None:
        return {}
    readonly = bool(guard.noted(request, "demo", False)) and not guard.is_instructor(request)
    mode = guard.noted(request, "mode", "own")
    return {"room": {"code": room, "mode": mode, "demo": mode == "demo", "readonly": readonly}}


async def act(request: Request) -> JSONAnswer:
    try:
        widget = find_widget(request)
        slug = request.path_params["action"]
        if slug not in widget.actions:
            known = ", ".join(sorted(widget.actions))
            return problem(404, f"widget {widget.name!r} has no action {slug!r}; known: {known}")
        guard.check_origin(request)
        sandbox = guard.sandbox_of(request)
        guard.check_demo(request)
        payload = await read_body(request)
        ctx = context(request, sandbox)
        # admission, rate budgets and the activity record: sent with the widget's lock
        ctx.way_in = await entry.enter(request, sandbox, widget.name, progress.held_fields(widget.name))
        # The key cap is judged by the widget's lock (its last recorded count);
        # Reset always runs, even past it: it is how a learner gets back.
        cap = request.app.state.settings.max_keys_per_sandbox
        # Under the lock, the action runs as the learner's: its prediction judged, its tour step counted.
        hub = request.app.state.hub
        # The stream shows this action's own snapshot, and the answer follows the stream (live/answers.py).
        offers = widget.offers_answer() and hub.follows(sandbox)
        async with answers.answering(hub, sandbox, widget.name, offers) as mine:
            outcome, snap = await widget.run(ctx, slug, payload, key_cap=cap, perform=attempt.run)
            mine.offer(snap)
            await mine.handed_on()
        return JSONAnswer({"outcome": outcome.as_json(), "snapshot": snap, **where(request)})
    except Exception as exc:  # noqa: BLE001
        return answer_error(exc)
