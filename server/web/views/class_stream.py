"""GET /instructor/rooms/{code}/events — the class page's live stream (and the projector's).

It sends the class (roster and answers, in words) whenever it changed: at once
when an answer's lab event arrives, else on a read every `EVERY` seconds for
what no event announces (a page opening, "last seen").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.live.streams import frame
from server.sandboxes import answers, rooms
from server.web.answer import dumps
from server.web.errors import is_fault
from server.web.views import class_state
from server.web.views.class_state import the_room
from server.web.views.replies import instructor_only

EVERY = 1.0  # seconds between reads when no event came


@instructor_only
async def events(request: Request) -> Response:
    room = await the_room(request)
    settings = request.app.state.settings
    return EventSourceResponse(follow(request, room.code, request.query_params.get("view") == "projector"),
                               ping=settings.stream_ping, send_timeout=settings.stream_send_timeout,
                               headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def follow(request: Request, code: str, projector: bool) -> AsyncIterator[bytes]:
    conn, hub = request.app.state.conn, request.app.state.hub
    deadline = time.monotonic() + request.app.state.settings.stream_lifetime
    last = b""
    with hub.streams.open(answers.class_stream(code), ()) as sub:
        while time.monotonic() < deadline:
            try:
                room = await rooms.get(conn, code)
                if room is None:
                    yield frame("closed", dumps({"code": code}))
                    return
                state = await class_state.read(request, room)
                encoded = dumps(class_state.class_json(request, state, projector))
            except Exception as exc:
                if not is_fault(exc):
                    raise
                encoded = dumps({"down": "Valkey is unreachable right now; the class page recovers when it returns."})
            if encoded != last:
                last = encoded
                yield frame("roster", encoded)
            try:
                async with asyncio.timeout(EVERY):
                    await sub.queue.get()
                sub.drain()  # a burst of answers is one read
            except TimeoutError:
                pass


def routes() -> list[BaseRoute]:
    return [Route("/instructor/rooms/{code}/events", events, methods=["GET"])]
