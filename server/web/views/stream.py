"""A page's live stream: every page of the sandbox morphs in what it sends, and on (re)connect gets a
fresh drawing of each widget, so a page never depends on replaying what it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import anyio
from jinja2 import Template
from sse_starlette.sse import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.live.streams import Notice, frame
from server.sandboxes import presence
from server.web import guards
from server.web.errors import WrongType, dumps, refusal_of
from server.web.services import services
from server.web.views.widgets import actor, admitter, snapshots_of

POLL_EVERY = 1.5  # seconds between reads while notifications are off (or a read failed)
LEAVE_WITHIN = 3.0  # seconds a closed stream may spend removing its presence (its entry lapses by itself)
log = logging.getLogger("emqlab.stream")


def routes() -> list[BaseRoute]:
    return [Route("/api/stream", stream, methods=["GET"])]


async def stream(request: Request) -> Response:
    lab = services(request).lab
    names = tuple(n for n in request.query_params.get("widgets", "").split(",") if n)
    unknown = [n for n in names if n not in lab.catalog.widgets]
    if unknown or len(names) > len(lab.catalog.widgets):
        raise guards.Refused(404, f"unknown widgets: {', '.join(n[:40] for n in unknown[:5]) or '(too many)'}")
    try:
        entry = await guards.enter(request, write=False, counts="reads")
    except guards.Refused as exc:  # Valkey away: the stream says so, and the page retries; a refusal is answered
        if exc.status != 503:
            raise
        return sse(request, _down_then_close(str(exc)))
    release = services(request).stream_slots.take(entry.visitor, services(request).settings.streams_per_visitor)
    return sse(request, _holding(release, events(request, entry, names)), release)


async def _holding(release: Callable[[], None], content: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The stream, its place given back however it ends (a response never started: `sse`'s background)."""
    try:
        async for chunk in content:
            yield chunk
    finally:
        release()


def sse(request: Request, content: AsyncIterator[bytes], done: Callable[[], None] | None = None) -> Response:
    """A live stream with the site's keep-alive, send deadline and no proxy buffering."""
    settings = services(request).settings
    return EventSourceResponse(content, ping=settings.stream_ping, send_timeout=settings.stream_send_timeout,
                               headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
                               background=BackgroundTask(done) if done else None)


async def _down_then_close(message: str) -> AsyncIterator[bytes]:
    yield frame("status", dumps({"valkey": "down", "message": message}))
    await asyncio.sleep(0.5)


async def events(request: Request, entry: guards.Entry, names: tuple[str, ...]) -> AsyncIterator[bytes]:
    hub = services(request).hub
    deadline = time.monotonic() + services(request).settings.stream_lifetime
    notice = services(request).templates.get_template("widgets/_notice.html")
    with hub.streams.open(entry.sandbox, names) as sub:
        async with _present(request, entry):
            yield frame("status", dumps(hub.status()))
            yield frame("where", dumps(entry.where()))  # the class (or Watch) this page acts in
            # Each frame is yielded as it is, never joined: a stream holds its last frame until the
            # next (here and in sse-starlette), and a widget's frame is one object shared by every
            # page (frames.Frames.event), where a join would be a copy of its own per page.
            sent, whole = await _snapshots(request, entry, names)
            for chunk in sent:
                yield chunk
            while (left := deadline - time.monotonic()) > 0:
                # notifications off, or a read that failed: read again on a timer, not only on news
                reread = hub.polling() or not whole
                try:
                    async with asyncio.timeout(min(left, POLL_EVERY) if reread else left):
                        first = await sub.queue.get()
                except TimeoutError:
                    if reread:
                        sent, whole = await _snapshots(request, entry, names)
                        for chunk in sent:
                            yield chunk
                    continue
                sent, resync, ending = _react([first, *sub.drain()], entry, notice)
                if resync or sub.overflowed:
                    sub.overflowed = False
                    fresh, whole = await _snapshots(request, entry, names)
                    sent += fresh
                for chunk in sent:
                    yield chunk
                if ending:
                    return


def _react(items: list[bytes | Notice], entry: guards.Entry, notice: Template) -> tuple[list[bytes], bool, bool]:
    """The frames to send, whether to read every widget afresh, whether to end. A reset or a class's
    sentence comes with the notice the page shows, drawn here (`html`)."""
    chunk: list[bytes] = []
    resync = ending = False
    for item in items:
        if isinstance(item, bytes):
            chunk.append(item)
            continue
        if item.kind == "room" and item.data.get("action") == "goto" and (entry.instructor or entry.watching):
            continue  # "bring everyone" moves learners' pages, not the instructor's
        said = item.kind == "reset" or "text" in item.data
        data = {**item.data, "html": notice.render(item.data)} if said else item.data
        chunk.append(frame(item.kind, dumps(data)))
        resync = resync or item.kind == "reset" or bool(item.data.get("resync"))
        # a class changed what this page acts in: the page reconnects (and is resolved afresh)
        ending = ending or (item.kind == "room" and bool(item.data.get("reconnect")))
    return chunk, resync, ending


async def _snapshots(request: Request, entry: guards.Entry, names: tuple[str, ...]) -> tuple[list[bytes], bool]:
    """A fresh drawing of each widget (its shared frame), read as the first paint reads it, and whether
    every one was read; one not read now (Valkey's faults) adds a status frame, and the stream reads again."""
    hub, lab = services(request).hub, services(request).lab
    widgets = [lab.catalog.widgets[name] for name in names]
    async with hub.streams.fresh:  # the wait is not the read's: outside its deadline
        try:
            found = await snapshots_of(lab, widgets, actor(entry), admitter(request, entry.sandbox, used=False))
        except Exception as exc:
            if isinstance(refused := refusal_of(exc), WrongType):  # the progress record: the page's words, read again
                return [frame("status", dumps({**hub.status(), "message": refused.on_page}))], False
            log.exception("snapshots of %s failed", ", ".join(names))
            return [], True
        frames = [services(request).frames.event(entry.sandbox, name, snap)
                  for name, snap in found.items() if snap is not None]
        if None in found.values():  # Valkey's status as the hub sees it once a read failed
            return [*frames, frame("status", dumps(hub.status()))], False
        return frames, True


@contextlib.asynccontextmanager
async def _present(request: Request, entry: guards.Entry) -> AsyncIterator[None]:
    """The visitor counted online on this page while the stream lasts (not an instructor watching)."""
    if entry.watching:
        yield
        return
    conn, settings = services(request).conn, services(request).settings
    stream, lasts, ttl = presence.new_stream(), settings.presence_ttl, settings.sandbox_ttl * 2
    referer, page, ended = request.headers.get("referer"), None, asyncio.Event()
    with contextlib.suppress(ValueError):  # a Referer that is no URL names no page
        seen = services(request).course.page(urlsplit(referer).path) if referer else None
        page = seen.path if seen is not None else None

    async def beat() -> None:
        """The entry kept alive while the stream is: a site killed stops beating, and it lapses."""
        while not ended.is_set():
            await asyncio.sleep(presence.beat_every(lasts))
            if not ended.is_set():
                with contextlib.suppress(Exception):  # Valkey away: the next beat tries again
                    await presence.here(conn, entry.visitor, stream, page, lasts, ttl)

    async with services(request).hub.streams.fresh:
        with contextlib.suppress(Exception):
            await presence.here(conn, entry.visitor, stream, page, lasts, ttl)
    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        ended.set()
        beating.cancel()
        # shielded, as the stream ends by being cancelled: a beat halfway through ends before the entry goes.
        # A crowd leaving at once queues as one opening does; bounded, as an entry not removed lapses anyway
        with anyio.move_on_after(LEAVE_WITHIN, shield=True), contextlib.suppress(Exception):
            await asyncio.wait([beating], timeout=2)
            async with services(request).hub.streams.fresh:
                await presence.leave(conn, entry.visitor, stream)
