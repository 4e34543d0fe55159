"""The widget API: one endpoint reads a widget's state, one runs its actions.

    GET  /api/widgets/<widget>/state      land the scenario if new, return the snapshot
    POST /api/widgets/<widget>/<action>   run one action, return what it did and the snapshot

Every answer is JSON. Bad input is a 4xx with a sentence saying what was wrong,
and nothing is written; Valkey being away is a 503 the widget shows.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from redis.exceptions import BusyLoadingError, ConnectionError as RedisConnectionError, TimeoutError as RedisTimeout
from starlette.requests import Request
from starlette.responses import JSONResponse

from server import guard
from server.emq.errors import EmqError
from server.emq.keyspace import BadId
from server.sandbox import NoSandbox
from server.widgets import WIDGETS
from server.widgets.base import BadInput, Context, Widget

log = logging.getLogger("emqlab.api")
VALKEY_DOWN = (RedisConnectionError, RedisTimeout, BusyLoadingError, OSError)
MAX_BODY = 16 * 1024


def problem(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


def find_widget(request: Request) -> Widget:
    name = request.path_params["widget"]
    widget = WIDGETS.get(name)
    if widget is None:
        raise LookupError(f"no widget named {name!r}; known: {', '.join(sorted(WIDGETS))}")
    return widget


async def read_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise BadInput(f"the request body is larger than {MAX_BODY} bytes")
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadInput(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadInput("the body must be a JSON object")
    return body


async def state(request: Request) -> JSONResponse:
    try:
        widget = find_widget(request)
        sandbox = guard.sandbox_of(request)
        ctx = Context(request.app.state.conn, sandbox)
        await guard.touch(request, sandbox, widget.name)
        await widget.ensure_landed(ctx)
        return JSONResponse({"snapshot": await widget.snapshot(ctx)})
    except Exception as exc:  # noqa: BLE001 - every failure becomes a clear JSON answer
        return answer_error(exc)


async def act(request: Request) -> JSONResponse:
    try:
        widget = find_widget(request)
        slug = request.path_params["action"]
        if slug not in widget.actions:
            return problem(404, f"widget {widget.name!r} has no action {slug!r}; known: {', '.join(sorted(widget.actions))}")
        guard.check_origin(request)
        sandbox = guard.sandbox_of(request)
        body = await read_body(request)
        await guard.check_rate(request, sandbox)
        ctx = Context(request.app.state.conn, sandbox)
        await guard.touch(request, sandbox, widget.name)
        if slug != "reset":
            await widget.ensure_landed(ctx)
        outcome = await widget.perform(ctx, slug, body)
        return JSONResponse({"outcome": outcome.as_json(), "snapshot": await widget.snapshot(ctx)})
    except Exception as exc:  # noqa: BLE001
        return answer_error(exc)


def answer_error(exc: Exception) -> JSONResponse:
    if isinstance(exc, LookupError):
        return problem(404, str(exc).strip("'\""))
    if isinstance(exc, guard.Refused):
        return problem(exc.status, str(exc))
    if isinstance(exc, NoSandbox):
        return problem(403, str(exc))
    if isinstance(exc, (BadInput, BadId)):
        return problem(400, str(exc))
    if isinstance(exc, EmqError):
        return problem(409, str(exc))
    if isinstance(exc, VALKEY_DOWN):
        return problem(503, "Valkey is unreachable right now; the widget will recover when it returns.")
    # A bug of ours: logged with its traceback on the server, never shown.
    log.exception("widget action failed", exc_info=exc)
    return problem(500, "the server failed on this action; it has been logged")
