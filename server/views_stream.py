"""GET /api/stream?widgets=a,b — the page's live stream of keys and effects.

On (re)connect the stream first sends a fresh snapshot of every widget, so a
browser that lost its connection resumes from the truth rather than from
replayed events. Then each keyspace notification of the sandbox becomes an
`effect` event, and the widgets whose queues it touched get a new `snapshot`
(notifications that arrive together are coalesced into one read). Streams
carry heartbeats, have a send timeout and a lifetime cap; the browser's
EventSource reconnects by itself after the cap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from server import guard
from server.sandbox import NoSandbox
from server.stream import Notice
from server.views_api import VALKEY_DOWN, problem
from server.widgets import WIDGETS, widget_for_queue
from server.widgets.base import Context

COALESCE_SECONDS = 0.015
log = logging.getLogger("emqlab.stream")


def sse(event: str, data: dict[str, Any], counter: list[int]) -> dict[str, Any]:
    counter[0] += 1
    return {"event": event, "id": str(counter[0]), "data": json.dumps(data), "retry": 1000}


async def stream(request: Request) -> Response:
    names = [n for n in request.query_params.get("widgets", "").split(",") if n]
    unknown = [n for n in names if n not in WIDGETS]
    if unknown or not names or len(names) > len(WIDGETS):
        shown = ", ".join(n[:40] for n in unknown[:5]) or "(none)"
        return problem(404, f"unknown or missing widgets: {shown}")
    settings = request.app.state.settings
    try:
        sandbox = guard.sandbox_of(request)
    except NoSandbox as exc:
        return problem(403, str(exc))
    except guard.Refused as exc:
        if exc.status != 503:
            return problem(exc.status, str(exc))
        # Valkey away before the room could be looked up: say so and end; the
        # browser's EventSource comes back by itself (a 503 would stop it).
        return EventSourceResponse(
            down_then_close(str(exc)), ping=settings.stream_ping, send_timeout=settings.stream_send_timeout,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
    return EventSourceResponse(
        events(request, sandbox, names),
        ping=settings.stream_ping,
        send_timeout=settings.stream_send_timeout,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def down_then_close(message: str) -> AsyncIterator[dict[str, Any]]:
    yield {"event": "status", "data": json.dumps({"valkey": "down", "error": message}), "retry": 2000}
    await asyncio.sleep(0.5)


async def events(request: Request, sandbox: str, names: list[str]) -> AsyncIterator[dict[str, Any]]:
    """The stream's events. Ids count up per connection; a reconnecting browser
    (Last-Event-ID or not) always starts from a fresh status and snapshot, so
    it never depends on replaying what it missed."""
    hub = request.app.state.hub
    settings = request.app.state.settings
    ctx = Context(request.app.state.conn, sandbox)
    counter = [0]
    deadline = time.monotonic() + settings.stream_lifetime
    async with hub.listen(sandbox) as sub:
        yield sse("status", {"valkey": "up" if hub.up else "down", "notifications": hub.notifications_on}, counter)
        admitted = await register(ctx, settings.max_sandboxes)
        async for item in snapshots(ctx, names, counter, land=admitted):
            yield item
        while (left := deadline - time.monotonic()) > 0:
            try:
                first = await asyncio.wait_for(sub.queue.get(), timeout=left)
            except asyncio.TimeoutError:
                break
            batch = [first]
            await asyncio.sleep(COALESCE_SECONDS)
            while not sub.queue.empty():
                batch.append(sub.queue.get_nowait())
            touched: set[str] = set()
            resync = sub.overflowed
            sub.overflowed = False
            for notice in batch:
                if notice.kind == "effect":
                    owner = widget_for_queue(notice.data["queue"])
                    if owner in names:
                        touched.add(owner)
                        yield sse("effect", {**notice.data, "widget": owner}, counter)
                elif notice.kind == "status":
                    yield sse("status", notice.data, counter)
                    resync = resync or notice.data.get("valkey") == "up"
                elif notice.kind == "reset":
                    yield sse("reset", notice.data, counter)
                    resync = True
            wanted = names if resync else [n for n in names if n in touched]
            if resync:
                resync = await register(ctx, settings.max_sandboxes)
            async for item in snapshots(ctx, wanted, counter, land=resync):
                yield item


async def register(ctx: Context, cap: int) -> bool:
    """A stream lands scenarios, so its sandbox is registered live first (the
    reaper removes keys of sandboxes that are not). False when the site is
    full (nothing is landed then); an absent Valkey shows in the snapshots."""
    try:
        await guard.admit(ctx.conn, ctx.sandbox, cap)
    except guard.Refused:
        return False
    except Exception:  # noqa: BLE001 - Valkey away: the snapshots say so
        pass
    return True


async def snapshots(ctx: Context, names: list[str], counter: list[int], land: bool) -> AsyncIterator[dict[str, Any]]:
    for name in names:
        widget = WIDGETS[name]
        try:
            if land:
                await widget.ensure_landed(ctx)
            yield sse("snapshot", await widget.snapshot(ctx), counter)
        except VALKEY_DOWN:
            yield sse("status", {"valkey": "down"}, counter)
            return
        except Exception:  # noqa: BLE001 - a widget bug must not end every widget's stream
            log.exception("snapshot of %s failed", name)
