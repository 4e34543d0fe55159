"""The widget API: a snapshot (JSON), the actions, a page's live stream, and a page's first paint.

A click travels: the guards, the body typed, `runner.act`, and back; every page of the sandbox
morphs in what its stream sends, and on (re)connect gets a fresh drawing of each widget, so a
page never depends on replaying what it missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import anyio
import msgspec
from jinja2 import Template
from markupsafe import Markup
from sse_starlette.sse import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.live.streams import Notice, frame
from server.refusal import Refusal
from server.sandboxes import admission, presence
from server.web import bodies, guards
from server.web.errors import FAULTS, JSONAnswer, WrongType, dumps, is_fault, refusal_of
from server.web.guards import client_address
from server.web.services import services
from server.web.templating import MARKER
from server.widgets import runner, specimen
from server.widgets.base import Widget
from server.widgets.snapshot import Snapshot
from server.widgets.turn import Actor, Busy

POLL_EVERY = 1.5  # seconds between reads while notifications are off (or a read failed)
READ_DEADLINE = 8.0  # seconds a first showing may take (landing included) before the stream says so
LEAVE_WITHIN = 3.0  # seconds a closed stream may spend removing its presence (its entry lapses by itself)
log = logging.getLogger("emqlab.stream")


def routes() -> list[BaseRoute]:
    return [Route("/api/widgets/{widget}/state", state, methods=["GET"]),
            Route("/api/widgets/{widget}/{action}", act, methods=["POST"]),
            Route("/api/stream", stream, methods=["GET"])]


def find(request: Request) -> Widget:
    name = request.path_params["widget"]
    found = services(request).lab.catalog.widgets.get(name)
    if found is None:
        raise Refusal(f"no widget named {name[:40]!r}", status=404)
    return found


def actor(entry: guards.Entry) -> Actor:
    ask = (entry.ask.widget, entry.ask.question, entry.ask.step, entry.ask.round) if entry.ask else None
    return Actor(entry.sandbox, entry.visitor, "instructor" if entry.instructor else "learner", entry.name,
                 entry.tab, entry.room, ask, veiled=bool(entry.ask and entry.ask.veils(entry.mode)), mode=entry.mode)


def door(request: Request) -> admission.Door:
    """The one admission every door into a sandbox passes (a widget, the console, an exercise):
    the site's cap and this address's share."""
    settings = services(request).settings
    limits = admission.Limits(settings.max_sandboxes, settings.address_sandboxes, settings.unused_idle)
    return admission.Door(limits, client_address(request))


def admitter(request: Request, sandbox: str, used: bool) -> runner.Admit:
    """The admission a first landing needs."""
    return functools.partial(door(request).enter, services(request).conn, sandbox, used)


async def state(request: Request) -> JSONAnswer:
    widget = find(request)
    entry = await guards.enter(request, write=False, counts="reads")
    snap = await runner.show(services(request).lab, widget, actor(entry),
                             admitter(request, entry.sandbox, used=False))
    return JSONAnswer({"snapshot": snap, **entry.where()})


async def act(request: Request) -> JSONAnswer:
    widget = find(request)
    found = widget.actions.get(request.path_params["action"])
    if found is None:
        raise guards.Refused(404, f"widget {widget.name!r} has no action {request.path_params['action'][:40]!r}; "
                                  f"known: {', '.join(sorted(widget.actions))}")
    entry = await guards.enter(request, write=True)
    body = await bodies.read(request, found.body)
    acted = await runner.act(services(request).lab, widget, actor(entry), found.slug, body,
                             admitter(request, entry.sandbox, used=True))
    return JSONAnswer({**msgspec.structs.asdict(acted), **entry.where()})


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
    """A fresh drawing of each widget (its shared frame), and whether every one was read (Valkey's
    faults: a status frame)."""
    lab, who = services(request).lab, actor(entry)
    widgets = [lab.catalog.widgets[name] for name in names]

    def down() -> bytes:  # Valkey's status as the hub sees it once a read failed
        return frame("status", dumps(services(request).hub.status()))

    async with services(request).hub.streams.fresh:  # the wait is not the read's: outside its deadline
        try:
            async with asyncio.timeout(READ_DEADLINE):
                found = await runner.show_all(lab, widgets, entry.sandbox)  # the landed ones: one round trip
        except Exception as exc:
            if is_fault(exc) or isinstance(exc, (TimeoutError, Busy)):
                return [down()], False
            if isinstance(refused := refusal_of(exc), WrongType):  # the progress record: the page's words, read again
                return [frame("status", dumps({**services(request).hub.status(), "message": refused.on_page}))], False
            log.exception("snapshots of %s failed", ", ".join(names))
            found = {}  # each read alone below
        frames = []
        for widget in widgets:
            try:
                async with asyncio.timeout(READ_DEADLINE):
                    snap = found[widget.name] if widget.name in found else await runner.show(
                        lab, widget, who, admitter(request, entry.sandbox, used=False))
                frames.append(services(request).frames.event(entry.sandbox, widget.name, snap))
            except Exception as exc:
                if is_fault(exc) or isinstance(exc, (TimeoutError, Busy)):
                    return [*frames, down()], False
                log.exception("snapshot of %s failed", widget.name)
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


async def fill(request: Request, body: Markup) -> Markup:
    """A page body with each widget marker replaced by the widget drawn from a snapshot read now: the
    visitor's own, or the specimen's opening scenario at `ver` 0 (which the stream's first frame
    replaces) for a sandbox not live. A widget that cannot be read now is drawn empty; its stream
    fills it (or says why). Each sandbox's widgets are read in one round trip."""
    names = MARKER.findall(body)
    if not names:
        return body
    lab, drawing = services(request).lab, services(request).drawing
    widgets = [lab.catalog.widgets[name] for name in dict.fromkeys(names)]
    try:
        # no budget spent: the page and the stream it opens are one showing, and the stream counts it
        entry = await guards.enter(request, write=False, counts="")
    except guards.Refused:
        entry = None
    # a visit without a valid sandbox cookie (the middleware just named one: a first visit, a crawler, a
    # flood's client) registers no sandbox (docs/LIMITS.md); it lands when its stream opens or it acts
    new_visitor = "sandbox" in request.scope.get("state", {})
    drawn: dict[str, str] = {}
    if entry is not None and not (new_visitor and entry.sandbox == entry.visitor):
        mine = await _shown(lab, widgets, actor(entry), admitter(request, entry.sandbox, used=False))
        for name, snap in mine.items():
            drawn[name] = services(request).frames.html(entry.sandbox, name, snap) if snap is not None else \
                drawing.html(lab.catalog.widgets[name], None)
    for name, snap in (await _shown(lab, [w for w in widgets if w.name not in drawn], specimen.OWNER)).items():
        drawn[name] = drawing.html(lab.catalog.widgets[name], specimen.shown(snap) if snap is not None else None)
    return Markup(MARKER.sub(lambda m: drawn[m.group(1)], body))


async def _shown(lab: runner.Lab, widgets: list[Widget], who: Actor,
                 admit: runner.Admit | None = None) -> dict[str, Snapshot | None]:
    """Each widget's snapshot in `who`'s sandbox: the landed ones read in one round trip, the others
    landed first. None: not readable now (Valkey away or busy, a landing still under way, a refused
    admission): drawn empty, its stream fills it. Left out: no room for the sandbox now (admission.Full),
    so the specimen draws it."""
    if not widgets:
        return {}
    try:
        async with asyncio.timeout(READ_DEADLINE):
            found = await runner.show_all(lab, widgets, who.sandbox)
    except FAULTS as exc:
        if not _drawn_empty(exc):
            raise
        return dict.fromkeys([w.name for w in widgets], None)
    shown: dict[str, Snapshot | None] = {}
    for widget in widgets:
        try:
            async with asyncio.timeout(READ_DEADLINE):
                shown[widget.name] = found[widget.name] if widget.name in found else \
                    await runner.show(lab, widget, who, admit)
        except admission.Full:
            continue
        except FAULTS as exc:
            if not _drawn_empty(exc):
                raise
            shown[widget.name] = None
    return shown


def _drawn_empty(exc: BaseException) -> bool:
    """Valkey away or busy, a landing still under way, a refused admission: the page still renders, the
    widget drawn empty; anything else is raised. TimeoutError is an OSError."""
    return is_fault(exc) or isinstance(exc, (TimeoutError, Busy, guards.Refused))
