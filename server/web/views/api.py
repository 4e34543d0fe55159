"""The widget API: one endpoint reads a widget's state, one runs its actions.

    GET  /api/widgets/<widget>/state      land the scenario if new, return the snapshot
    POST /api/widgets/<widget>/<action>   run one action, return what it did and the snapshot

Every answer is JSON. Bad input is a 4xx with a sentence saying what was wrong,
and nothing is written; Valkey being away is a 503 the widget shows.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import (
    BusyLoadingError,
    ClusterError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from starlette.requests import Request
from starlette.responses import JSONResponse

from server.web import body
from server.web import guard
from server.emq.errors import EmqError
from server.emq.keyspace import BadId
from server.sandboxes.sandbox import NoSandbox
from server.widgets import WIDGETS, attempt
from server.widgets.base import BadInput, Busy, Context, TooManyKeys, Widget

log = logging.getLogger("emqlab.api")
# Valkey away, loading, or a replica after a failover: the widget retries.
# On a cluster: no node answers (RedisClusterException), or the command's
# retries ran out while the topology changed (ClusterError, ClusterDownError).
VALKEY_DOWN = (RedisConnectionError, RedisTimeout, BusyLoadingError, ReadOnlyError, OSError,
               RedisClusterException, ClusterError)


def problem(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


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


async def state(request: Request) -> JSONResponse:
    try:
        widget = find_widget(request)
        sandbox = guard.sandbox_of(request)
        await guard.touch(request, sandbox, widget.name)
        snap = await widget.show(context(request, sandbox))
        return JSONResponse({"snapshot": snap, **where(request)})
    except Exception as exc:  # noqa: BLE001 - every failure becomes a clear JSON answer
        return answer_error(exc)


def context(request: Request, sandbox: str) -> Context:
    """The widget's context: the sandbox, who acts, and from which page."""
    tab = "".join(ch for ch in request.headers.get("x-emqlab-tab", "")[:32] if ch.isalnum())
    by = "instructor" if guard.is_instructor(request) else "learner"
    return Context(request.app.state.conn, sandbox, by=by, tab=tab)


def where(request: Request) -> dict[str, Any]:
    """The room the answer comes from, if any (the page can say so)."""
    room = guard.room_of(request)
    if room is None:
        return {}
    return {"room": {"code": room, "demo": bool(getattr(request.state, "demo", False))}}


async def act(request: Request) -> JSONResponse:
    try:
        widget = find_widget(request)
        slug = request.path_params["action"]
        if slug not in widget.actions:
            return problem(404, f"widget {widget.name!r} has no action {slug!r}; known: {', '.join(sorted(widget.actions))}")
        guard.check_origin(request)
        sandbox = guard.sandbox_of(request)
        guard.check_demo(request)
        payload = await read_body(request)
        await guard.enter(request, sandbox, widget.name, cap_keys=False)
        # The key cap is judged by the widget's lock (its last recorded count);
        # Reset always runs, even past it: it is how a learner gets back.
        cap = request.app.state.settings.max_keys_per_sandbox
        # Under the lock, the action runs as the learner's: its prediction judged, its tour step counted.
        outcome, snap = await widget.run(context(request, sandbox), slug, payload, key_cap=cap, perform=attempt.run)
        return JSONResponse({"outcome": outcome.as_json(), "snapshot": snap, **where(request)})
    except Exception as exc:  # noqa: BLE001
        return answer_error(exc)


def answer_error(exc: Exception) -> JSONResponse:
    if isinstance(exc, LookupError):
        return problem(404, str(exc).strip("'\""))
    if isinstance(exc, guard.Refused):
        headers = {"Retry-After": "10"} if exc.status in (429, 503) else None
        return JSONResponse({"error": str(exc)}, status_code=exc.status, headers=headers)
    if isinstance(exc, body.BadBody):
        return problem(exc.status, str(exc))
    if isinstance(exc, NoSandbox):
        return problem(403, str(exc))
    if isinstance(exc, (BadInput, BadId)):
        return problem(400, str(exc))
    if isinstance(exc, TooManyKeys):
        return problem(409, str(exc))
    if isinstance(exc, Busy):
        return JSONResponse({"error": str(exc)}, status_code=503, headers={"Retry-After": "1"})
    if isinstance(exc, EmqError):
        return problem(409, str(exc))
    if isinstance(exc, VALKEY_DOWN):
        return JSONResponse(
            {"error": "Valkey is unreachable right now; the widget will recover when it returns."},
            status_code=503, headers={"Retry-After": "2"},
        )
    if isinstance(exc, ResponseError) and str(exc).startswith("OOM"):
        return JSONResponse(
            {"error": "Valkey is out of memory right now; idle sandboxes expire, try again in a minute."},
            status_code=503, headers={"Retry-After": "30"},
        )
    # A bug of ours: logged with its traceback on the server, never shown.
    log.exception("widget action failed", exc_info=exc)
    return problem(500, "the server failed on this action; it has been logged")
