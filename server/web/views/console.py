"""The console's endpoints: run a line (`POST /api/console`), read the transcript (`GET`).

A line passes the guards an action passes, then runs as the sandbox's Valkey
ACL user (server/console/), a write under its widget's lock.
"""

from __future__ import annotations

import contextlib
from typing import Annotated

import msgspec
from redis.exceptions import OutOfMemoryError
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from server.console import transcript
from server.console.api import ConsoleContext, queue_lock, run_line
from server.console.parse import Limits
from server.web import bodies, guards
from server.web.errors import JSONAnswer
from server.web.services import services
from server.web.views.widgets import door


class Line(msgspec.Struct, forbid_unknown_fields=True):
    command: Annotated[str, msgspec.Meta(max_length=8192)]


def context(request: Request, entry: guards.Entry) -> ConsoleContext:
    settings, catalog = services(request).settings, services(request).catalog
    # A queue's lock is its widget's: the lock of the widget's first queue, which every action takes.
    first = {part: w.queue_parts[0] for w in catalog.widgets.values() for part in w.queue_parts}
    lock = queue_lock(services(request).conn, entry.sandbox)
    return ConsoleContext(admin=services(request).conn, runner=services(request).console, sandbox=entry.sandbox,
                          queues=frozenset(first), lock=lambda part: lock(first.get(part, part)),
                          budget=settings.sandbox_bytes, limits=Limits(argument_bytes=settings.max_payload_bytes),
                          read_only=guards.DEMO_REFUSAL if entry.readonly else None,
                          door=door(request),
                          # each queue's landed rows, which KEYS lists as a Reset finds them
                          ids={part: w.job_ids(part) for w in catalog.widgets.values() for part in w.queue_parts})


async def run_command(request: Request) -> JSONAnswer:
    # a read-only page may still read: its writes are refused by the console itself
    entry = await guards.enter(request, write=False)
    guards.check_origin(request)
    line = await bodies.read(request, Line)
    reply = await run_line(context(request, entry), line.command)
    body, prefix = reply.body(), entry.sandbox + "."
    # a reply as the learner writes keys: without the sandbox's prefix (inside values too)
    body["reply_lines"] = [text.replace(prefix, "") for text in body["reply_lines"]]
    # over maxmemory the transcript is not kept, and the reply (a read's answer, a 503 in words) still goes
    with contextlib.suppress(OutOfMemoryError):
        await transcript.record(services(request).conn, entry.sandbox, entry.visitor, body,
                                services(request).settings.sandbox_ttl)
    return JSONAnswer(body, status_code=reply.status)


async def read_transcript(request: Request) -> JSONAnswer:
    entry = await guards.enter(request, write=False, counts="reads")
    return JSONAnswer({"transcript": await transcript.read(services(request).conn, entry.sandbox, entry.visitor)})


def routes() -> list[BaseRoute]:
    return [Route("/api/console", run_command, methods=["POST"]),
            Route("/api/console", read_transcript, methods=["GET"])]
