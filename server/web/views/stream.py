"""GET /api/stream?widgets=a,b — the page's live stream of keys and effects.

(`?widgets=` with none: a page without widgets following its class's events.)

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
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.live import answers, effects, presence
from server.live.fanout import Batch, Compose, Delivery, Notice
from server.live.hub import MEMORY_FULL, Hub
from server.sandboxes.sandbox import NoSandbox
from server.web import answer, guard
from server.web.errors import VALKEY_DOWN, is_out_of_memory, problem
from server.web.sse import StalledSafeResponse
from server.widgets import WIDGETS, widget_for_queue
from server.widgets.base import Context

POLL_EVERY = 1.5  # seconds between snapshot reads while notifications are off
log = logging.getLogger("emqlab.stream")


def sse(event: str, data: Mapping[str, object], counter: list[int]) -> dict[str, Any]:
    counter[0] += 1
    return {"event": event, "id": str(counter[0]), "data": answer.dumps(data), "retry": 1000}


def body(event: str, data: str) -> bytes:
    """An event's lines after its id (`data` is one line of JSON)."""
    return f"event: {event}\r\ndata: {data}\r\nretry: 1000\r\n\r\n".encode()


def frame(event: str, data: str, counter: list[int] | None) -> bytes:
    """One event, encoded as sse-starlette would: its id (none in a shared batch), then its body."""
    if counter is None:
        return body(event, data)
    counter[0] += 1
    return f"id: {counter[0]}\r\n".encode() + body(event, data)


async def stream(request: Request) -> Response:
    # No widget at all: a page without widgets that follows its class (the
    # status, resets and the class's moves; no snapshot), site/static/room-follow.js.
    names = [n for n in request.query_params.get("widgets", "").split(",") if n]
    unknown = [n for n in names if n not in WIDGETS]
    if unknown or len(names) > len(WIDGETS):
        shown = ", ".join(n[:40] for n in unknown[:5]) or "(too many)"
        return problem(404, f"unknown widgets: {shown}")
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
        return StalledSafeResponse(
            down_then_close(str(exc)), ping=settings.stream_ping, send_timeout=settings.stream_send_timeout,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
    return StalledSafeResponse(
        events(request, sandbox, names),
        ping=settings.stream_ping,
        send_timeout=settings.stream_send_timeout,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def down_then_close(message: str) -> AsyncIterator[dict[str, Any]]:
    yield {"event": "status", "data": answer.dumps({"valkey": "down", "error": message}), "retry": 2000}
    await asyncio.sleep(0.5)


async def events(request: Request, sandbox: str, names: list[str]) -> AsyncIterator[dict[str, Any] | bytes]:
    """The stream's events. A reconnecting browser (Last-Event-ID or not)
    always starts from a fresh status and snapshot, so it never depends on
    replaying what it missed; the ids of a stream's own frames count up per
    connection, a delivered batch's frames carry none (they are the same
    bytes for every page).

    A batch of the sandbox's writes comes composed (`compose`, once for every
    page showing the same widgets): its effects and the snapshots it calls
    for, read once (`Hub.shared_read`) and encoded once. What the stream
    writes at a time goes out as one chunk (one write)."""
    hub: Hub = request.app.state.hub
    settings = request.app.state.settings
    ctx = Context(request.app.state.conn, sandbox)
    counter = [0]
    deadline = time.monotonic() + settings.stream_lifetime
    present = Presence(request)
    async with hub.listen(sandbox, tuple(names), composer(ctx, hub, names)) as sub, present:
        yield sse("status", hub.status(), counter)
        since = time.monotonic()
        admitted = await register(request, ctx)
        yield b"".join([item async for item in snapshots(ctx, names, counter, admitted, hub, since)])
        while (left := deadline - time.monotonic()) > 0:
            polling = hub.polling()
            try:
                # asyncio.timeout, not wait_for: no task per wait, a thousand streams wait cheaply
                async with asyncio.timeout(min(left, POLL_EVERY) if polling else left):
                    first = await sub.queue.get()
            except TimeoutError:
                if polling:
                    # Notifications are off: nothing will tell this stream of a change, so read.
                    now = time.monotonic()
                    yield b"".join([item async for item in snapshots(ctx, names, counter, False, hub, now)])
                continue
            reaction = react([first, *sub.drain()], counter, present)
            if reaction.ending:
                yield b"".join(reaction.chunk)
                return
            chunk = reaction.chunk
            if reaction.resync or sub.overflowed:
                sub.overflowed = False
                since = time.monotonic()
                land = await register(request, ctx)
                chunk += [item async for item in snapshots(ctx, names, counter, land, hub, since)]
            if chunk:
                yield b"".join(chunk)


def composer(ctx: Context, hub: Hub, names: list[str]) -> Compose:
    """How a closed batch becomes the bytes every page showing `names` gets."""

    async def compose(batch: Batch) -> bytes:
        chunk: list[bytes] = []
        owned: dict[str, list[Notice]] = {}  # each widget's notices in the batch, in order
        touched: set[str] = set()
        for notice in batch.notices:
            owner = effect_owner(notice)
            if owner not in names:
                continue
            owned.setdefault(owner, []).append(notice)
            if notice.kind == "effect":
                touched.add(owner)
                chunk.append(frame("effect", effect_data(notice, owner), None))
            elif notice.kind == "state":
                touched.add(owner)  # the widget's own lab state (move, choices, outcome): no effect to log
        for name in (n for n in names if n in touched):
            # A widget's snapshot depends on its own keys only: a read that
            # started after its last notice came sees every write of the batch.
            since = owned[name][-1].seen
            mine = await answers.offered(hub, batch, name, owned[name])
            if mine is not None:  # the action's own read, proven as fresh
                hub.seed((ctx.sandbox, name), since, body("snapshot", answer.dumps(mine)))
            chunk += [item async for item in snapshots(ctx, [name], None, False, hub, since)]
        return b"".join(chunk)

    return compose


@dataclass
class Reaction:
    """What a stream's own items ask of it: frames to send, a fresh read of
    every widget, or the end of the stream."""

    chunk: list[bytes] = field(default_factory=list)
    resync: bool = False
    ending: bool = False


def react(items: list[Notice | Delivery], counter: list[int], present: Presence) -> Reaction:
    out = Reaction()
    for item in items:
        if isinstance(item, Delivery):
            out.chunk.append(item.chunk)
        elif item.kind == "status":
            out.chunk.append(frame("status", answer.dumps(item.data), counter))
            out.resync = out.resync or bool(item.data.get("resync", item.data.get("valkey") == "up"))
        elif item.kind == "resync":
            out.resync = True
        elif item.kind == "reset":
            out.chunk.append(frame("reset", answer.dumps(item.data), counter))
            out.resync = True
        elif item.kind == "room" and present.hears(item.data):
            out.chunk.append(frame("room", answer.dumps(item.data), counter))
            # The class changed what this page acts in: the page reconnects
            # (and the middleware resolves its sandbox afresh); end here.
            out.ending = out.ending or bool(item.data.get("reconnect"))
    return out


def effect_owner(notice: Notice) -> str:
    """The widget owning the notice's queue ("" for none), once per notice, not once per page."""
    if notice.owner is None:
        notice.owner = widget_for_queue(notice.data["queue"]) or ""
    return notice.owner


def effect_data(notice: Notice, owner: str) -> str:
    """The effect event's JSON for `owner`, encoded once for every stream."""
    data = notice.encoded.get(owner)
    if data is None:
        words = effects.describe(str(notice.data["event"]), str(notice.data["key"]))
        data = notice.encoded[owner] = answer.dumps({**notice.data, "widget": owner, "words": words})
    return data


class Presence:
    """This stream counted on its visitor's sandbox while it is open (the
    roster's "online", beaten for by the worker's `Attendance`); the
    instructor watching someone else is not counted."""

    def __init__(self, request: Request) -> None:
        self.attendance: presence.Attendance = request.app.state.attendance
        self.visitor: str | None = guard.noted(request, "visitor", None)
        self.watching = bool(guard.noted(request, "watching", None))
        self.instructor = guard.is_instructor(request)
        self.page = guard.page_of(request)
        self.stack = contextlib.AsyncExitStack()

    def hears(self, data: dict[str, Any]) -> bool:
        """A class's "bring everyone" moves learners' pages, not the instructor's."""
        return not (data.get("action") == "goto" and (self.instructor or self.watching))

    async def __aenter__(self) -> Presence:
        if self.visitor and not self.watching:
            await self.stack.enter_async_context(self.attendance.present(self.visitor, self.page))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stack.aclose()


async def register(request: Request, ctx: Context) -> bool:
    """A stream lands scenarios, so its sandbox is registered live first (the
    reaper removes keys of sandboxes that are not). False when the site is
    full or out of memory (nothing is landed then); an absent Valkey shows in
    the snapshots."""
    try:
        await guard.admit_request(request, ctx.sandbox, used=False)
    except guard.Refused:
        return False
    except VALKEY_DOWN:
        return True  # Valkey away: the snapshots that follow say so
    except Exception as exc:
        if is_out_of_memory(exc):
            return False  # the hub's heartbeat says so, and resyncs when memory frees
        raise
    return True


async def snapshots(
    ctx: Context, names: list[str], counter: list[int] | None, land: bool, hub: Hub, since: float
) -> AsyncIterator[bytes]:
    """A fresh snapshot event per widget, from a read that started after `since`."""
    for name in names:
        widget = WIDGETS[name]
        try:
            async def read(widget: Any = widget, land: bool = land) -> bytes:
                # on (re)connect the widget lands if it has not yet (`show`)
                return body("snapshot", answer.dumps(await (widget.show(ctx) if land else widget.snapshot(ctx))))

            # the event's body is encoded once for every stream of the sandbox; a stream's own read adds its id
            shared = await hub.shared_read((ctx.sandbox, name), since, read)
            if counter is None:
                yield shared
            else:
                counter[0] += 1
                yield f"id: {counter[0]}\r\n".encode() + shared
        except VALKEY_DOWN:
            yield frame("status", answer.dumps({"valkey": "down"}), counter)
            return
        except Exception as exc:
            if not is_out_of_memory(exc):
                log.exception("snapshot of %s failed", name)
                continue
            # Landing the scenario needs memory Valkey does not have: say so, and
            # read what is there; the heartbeat resyncs the stream when memory frees.
            yield frame("status", answer.dumps(hub.status(MEMORY_FULL)), counter)
            land = False
