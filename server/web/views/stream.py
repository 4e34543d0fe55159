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
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.live import effects, presence
from server.live.fanout import Notice
from server.live.hub import MEMORY_FULL, Hub
from server.sandboxes.sandbox import NoSandbox
from server.web import guard
from server.web.errors import VALKEY_DOWN, is_out_of_memory, problem
from server.web.sse import StalledSafeResponse
from server.widgets import WIDGETS, widget_for_queue
from server.widgets.base import Context

POLL_EVERY = 1.5  # seconds between snapshot reads while notifications are off
log = logging.getLogger("emqlab.stream")


def sse(event: str, data: Mapping[str, object], counter: list[int]) -> dict[str, Any]:
    counter[0] += 1
    return {"event": event, "id": str(counter[0]), "data": json.dumps(data), "retry": 1000}


def body(event: str, data: str) -> bytes:
    """An event's lines after its id (`data` is one line of JSON)."""
    return f"event: {event}\r\ndata: {data}\r\nretry: 1000\r\n\r\n".encode()


def frame(event: str, data: str, counter: list[int]) -> bytes:
    """One event, encoded as sse-starlette would: its id, then its body."""
    counter[0] += 1
    return f"id: {counter[0]}\r\n".encode() + body(event, data)


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
    yield {"event": "status", "data": json.dumps({"valkey": "down", "error": message}), "retry": 2000}
    await asyncio.sleep(0.5)


async def events(request: Request, sandbox: str, names: list[str]) -> AsyncIterator[dict[str, Any] | bytes]:
    """The stream's events. Ids count up per connection; a reconnecting browser
    (Last-Event-ID or not) always starts from a fresh status and snapshot, so
    it never depends on replaying what it missed.

    The events of one coalesced batch go out as one chunk (one write), and
    the snapshot a batch calls for is read once for every stream of the
    sandbox (`Hub.shared_read`), encoded once, and sent to each."""
    hub: Hub = request.app.state.hub
    settings = request.app.state.settings
    ctx = Context(request.app.state.conn, sandbox)
    counter = [0]
    deadline = time.monotonic() + settings.stream_lifetime
    present = Presence(request)
    async with hub.listen(sandbox) as sub, present:
        yield sse("status", hub.status(), counter)
        since = time.monotonic()
        admitted = await register(request, ctx)
        yield b"".join([item async for item in snapshots(ctx, names, counter, admitted, hub, since)])
        while (left := deadline - time.monotonic()) > 0:
            polling = hub.polling()
            await present.beat()
            try:
                wait = min(left, POLL_EVERY if polling else presence.EVERY)
                first = await asyncio.wait_for(sub.queue.get(), timeout=wait)
            except TimeoutError:
                if polling:
                    # Notifications are off: nothing will tell this stream of a change, so read.
                    now = time.monotonic()
                    yield b"".join([item async for item in snapshots(ctx, names, counter, False, hub, now)])
                continue
            batch = await sub.batch(first)
            resync = sub.overflowed
            sub.overflowed = False
            since = max(notice.seen for notice in batch)
            reaction = react(batch, names, counter, present)
            chunk, touched = reaction.chunk, reaction.touched
            resync = resync or reaction.resync
            if reaction.ending:
                yield b"".join(chunk)
                return
            wanted = names if resync else [n for n in names if n in touched]
            if resync:
                since = time.monotonic()
                resync = await register(request, ctx)
            chunk += [item async for item in snapshots(ctx, wanted, counter, resync, hub, since)]
            if chunk:
                yield b"".join(chunk)


@dataclass
class Reaction:
    """What one batch of notices asks of a stream: frames to send, widgets to
    read again (all of them on a resync), or the end of the stream."""

    chunk: list[bytes] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)
    resync: bool = False
    ending: bool = False


def react(batch: list[Notice], names: list[str], counter: list[int], present: Presence) -> Reaction:
    out = Reaction()
    for notice in batch:
        if notice.kind == "state":
            # the widget's own lab state (its move, choices, last outcome)
            # changed: a fresh snapshot, no effect to log
            owner = widget_for_queue(notice.data["queue"]) or ""
            if owner in names:
                out.touched.add(owner)
        elif notice.kind == "effect":
            owner = effect_owner(notice)
            if owner in names:
                out.touched.add(owner)
                out.chunk.append(frame("effect", effect_data(notice, owner), counter))
        elif notice.kind == "status":
            out.chunk.append(frame("status", json.dumps(notice.data), counter))
            out.resync = out.resync or bool(notice.data.get("resync", notice.data.get("valkey") == "up"))
        elif notice.kind == "reset":
            out.chunk.append(frame("reset", json.dumps(notice.data), counter))
            out.resync = True
        elif notice.kind == "room" and present.hears(notice.data):
            out.chunk.append(frame("room", json.dumps(notice.data), counter))
            # The class changed what this page acts in: the page reconnects
            # (and the middleware resolves its sandbox afresh); end here.
            out.ending = out.ending or bool(notice.data.get("reconnect"))
    return out


def effect_owner(notice: Notice) -> str:
    """The widget owning the effect's queue ("" for none), once per notice, not once per stream."""
    if notice.owner is None:
        notice.owner = widget_for_queue(notice.data["queue"]) or ""
    return notice.owner


def effect_data(notice: Notice, owner: str) -> str:
    """The effect event's JSON for `owner`, encoded once for every stream."""
    data = notice.encoded.get(owner)
    if data is None:
        words = effects.describe(str(notice.data["event"]), str(notice.data["key"]))
        data = notice.encoded[owner] = json.dumps({**notice.data, "widget": owner, "words": words})
    return data


class Presence:
    """This stream counted on its visitor's sandbox while it is open (the
    roster's "online"); the instructor watching someone else is not counted."""

    def __init__(self, request: Request) -> None:
        self.conn = request.app.state.conn
        self.visitor: str | None = getattr(request.state, "visitor", None)
        self.watching = bool(getattr(request.state, "watching", None))
        self.instructor = guard.is_instructor(request)
        self.page = guard.page_of(request)
        self.last = time.monotonic()  # arriving counts as the first beat

    def hears(self, data: dict[str, Any]) -> bool:
        """A class's "bring everyone" moves learners' pages, not the instructor's."""
        return not (data.get("action") == "goto" and (self.instructor or self.watching))

    async def beat(self) -> None:
        """At most one heartbeat write every presence.EVERY seconds, busy or idle."""
        if self.visitor and not self.watching and time.monotonic() - self.last >= presence.EVERY:
            self.last = time.monotonic()
            await presence.beat(self.conn, self.visitor)

    async def __aenter__(self) -> Presence:
        if self.visitor and not self.watching:
            await presence.arrive(self.conn, self.visitor, self.page)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.visitor and not self.watching:
            await presence.depart(self.conn, self.visitor)


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
    ctx: Context, names: list[str], counter: list[int], land: bool, hub: Hub, since: float
) -> AsyncIterator[bytes]:
    """A fresh snapshot event per widget, from a read that started after `since`."""
    for name in names:
        widget = WIDGETS[name]
        try:
            async def read(widget: Any = widget, land: bool = land) -> bytes:
                # on (re)connect the widget lands if it has not yet (`show`)
                return body("snapshot", json.dumps(await (widget.show(ctx) if land else widget.snapshot(ctx))))

            # the event's body is encoded once for every stream of the sandbox; each adds its own id
            counter[0] += 1
            yield f"id: {counter[0]}\r\n".encode() + await hub.shared_read((ctx.sandbox, name), since, read)
        except VALKEY_DOWN:
            yield frame("status", json.dumps({"valkey": "down"}), counter)
            return
        except Exception as exc:
            if not is_out_of_memory(exc):
                log.exception("snapshot of %s failed", name)
                continue
            # Landing the scenario needs memory Valkey does not have: say so, and
            # read what is there; the heartbeat resyncs the stream when memory frees.
            yield frame("status", json.dumps(hub.status(MEMORY_FULL)), counter)
            land = False
