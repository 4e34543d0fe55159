"""The console's endpoints.

    POST /api/console   {"command": "HGETALL emq:{fanin}:job:JOBparent"}
                        -> {"command", "reply_lines", "kind": "reply" | "error"}
    GET  /api/console   -> {"transcript": [{"command", "reply_lines", "kind"}, ...]}

A command passes the guards every widget action passes (Origin, the sandbox
from the signed cookie, demo mode read-only for writes, the rate limit, the
key cap for writes), then the console's own checks (server/console/). A
refusal is a 4xx whose JSON names the reason, with the line the transcript
shows (`kind: "refused"`), and nothing was sent to Valkey. A write runs under
the action lock of the widgets whose queues it touches and ends as their
actions do (a new version, the key count recorded), so every open page
repaints; its effects reach the effects log through the keyspace
notifications, as for any click.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from server.console import owners, run, transcript
from server.console import plan as planning
from server.console.allow import Refusal
from server.console.confine import Confinement
from server.console.parse import Limits, Malformed
from server.sandboxes.sandbox import NoSandbox
from server.web import body, guard
from server.web.answer import JSONAnswer
from server.web.errors import OUT_OF_MEMORY, is_out_of_memory
from server.web.views.api import answer_error, context
from server.widgets import WIDGETS
from server.widgets.base import TooManyKeys

CONSOLE = "console"  # the name activity and rate records use


def course_queues() -> frozenset[str]:
    """Every queue a widget uses, relative to the sandbox ("fanin", "outbox.orders")."""
    return frozenset(".".join(parts) for widget in WIDGETS.values() for parts in widget.queue_parts)


def limits(request: Request) -> Limits:
    return Limits(argument_bytes=request.app.state.settings.max_payload_bytes)


def refused(status: int, message: str, command: str) -> JSONAnswer:
    return JSONAnswer(
        {"error": message, "command": command, "reply_lines": [f"(refused) {message}"], "kind": "refused"},
        status_code=status, headers={"Retry-After": "10"} if status == 429 else None,
    )


async def read_command(request: Request) -> str:
    payload = await body.read_json(request, request.app.state.settings.max_body_bytes)
    command = payload.get("command")
    if not isinstance(command, str) or set(payload) - {"command"}:
        raise Malformed('send {"command": "<a Valkey command>"} and nothing else')
    return command


async def run_command(request: Request) -> JSONAnswer:
    command = ""
    try:
        guard.check_origin(request)
        sandbox = guard.sandbox_of(request)
        command = await read_command(request)
        where = Confinement(sandbox, course_queues())
        plan = planning.plan(command, where, limits(request))
        if plan.writes:
            guard.check_demo(request)
        await guard.enter(request, sandbox, CONSOLE)
        answer = await execute(request, sandbox, plan, where)
        await transcript.record(
            request.app.state.conn, sandbox, guard.visitor_of(request), answer.as_json(),
            request.app.state.settings.sandbox_ttl,
        )
        return JSONAnswer(answer.as_json())
    except (Refusal, guard.Refused) as exc:
        return refused(exc.status, str(exc), command)
    except TooManyKeys as exc:
        return refused(409, str(exc), command)
    except (Malformed, body.BadBody) as exc:
        return refused(getattr(exc, "status", 400), str(exc), command)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a clear JSON answer
        if is_out_of_memory(exc):
            return out_of_memory(command, exc)
        return answer_error(exc)


def out_of_memory(command: str, exc: Exception) -> JSONAnswer:
    """Valkey refused the command for memory: the 503 every fault gets, and
    the transcript's line in Valkey's own words (nothing was written)."""
    lines = run.error_lines(exc)
    return JSONAnswer({"error": OUT_OF_MEMORY, "command": command, "reply_lines": lines, "kind": "error"},
                      status_code=503, headers={"Retry-After": "30"})


async def execute(request: Request, sandbox: str, plan: planning.Plan, where: Confinement) -> run.Answer:
    """Reads run as they are; a write runs under the locks of the widgets it touches."""
    conn = request.app.state.console_conn
    if not plan.writes:
        return await run.execute(conn, plan, where)
    ctx = context(request, sandbox)
    async with owners.held(ctx, set(plan.written), request.app.state.settings.max_keys_per_sandbox):
        await owners.index(ctx, plan.written)
        return await run.execute(conn, plan, where)


async def read_transcript(request: Request) -> JSONAnswer:
    try:
        sandbox = guard.sandbox_of(request)
        entries: list[dict[str, Any]] = await transcript.read(
            request.app.state.conn, sandbox, guard.visitor_of(request)
        )
        return JSONAnswer({"transcript": entries})
    except NoSandbox as exc:
        return JSONAnswer({"error": str(exc)}, status_code=403)
    except Exception as exc:  # noqa: BLE001
        return answer_error(exc)


def routes() -> list[BaseRoute]:
    return [
        Route("/api/console", run_command, methods=["POST"]),
        Route("/api/console", read_transcript, methods=["GET"]),
    ]
