"""The open streams, by sandbox, and what each is handed.

A sandbox's keyspace notifications gather into one batch per change: an action holds its widget's
lock (`lab:{q}:lock`) around its writes, so a batch with a lock held closes at its deletion (at most
HELD_MAX), one without after QUIET. A closed batch becomes frames once (each effect worded, each
touched widget drawn once), however many pages watch; one flush at a time per sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
from redis.exceptions import ResponseError

from server.live import effects
from server.valkey.client import stop_tasks
from server.valkey.reply import wrong_type

log = logging.getLogger("emqlab.stream")

QUEUE_CAP = 500  # items one stream may lag behind before it is resynced instead
READS_AT_ONCE = 64  # snapshot reads in flight for the streams: an overload queues here, not in the pool
# A page's fresh reads (its first drawing, a resync's, its presence) in flight at once: a class's
# thousand pages opening (or resyncing after a reset) together queue here. Unbounded, each waiting
# read took a pooled connection of its own, and the pool keeps every connection it ever opened.
FRESH_AT_ONCE = 64
READ_DEADLINE = 5.0  # seconds one read may take before the change is dropped (the page resyncs later)
QUIET = 0.010  # seconds a batch without a held lock stays open for more notices
HELD_MAX = 0.250  # seconds a held lock may keep a batch open


class Worded(msgspec.Struct, frozen=True):
    """One keyspace notification of a change, in words (server/live/effects.py)."""

    event: str
    key: str  # as the learner writes it: no sandbox prefix
    words: str
    queue: str = ""  # the queue part under the sandbox
    at: float = 0.0


@dataclass
class Change:
    """A sandbox's closed batch: the widgets it touched and, by widget, their learner-key effects."""

    widgets: set[str] = field(default_factory=set)
    effects: dict[str, list[Worded]] = field(default_factory=dict)


class Painter(Protocol):
    """What draws a widget's frame (`server/widgets/frames.py`); b"": nothing to send now."""

    async def frame(self, sandbox: str, widget: str, effects: Sequence[Worded]) -> bytes: ...


@dataclass(frozen=True)
class Notice:
    """Something a page must hear that is not a change of its keys."""

    kind: str  # status | reset | room | resync | …
    data: dict[str, Any] = field(default_factory=dict)


class Subscription:
    """One open stream's inbox."""

    def __init__(self, widgets: tuple[str, ...]) -> None:
        self.widgets = widgets
        self.queue: asyncio.Queue[bytes | Notice] = asyncio.Queue(maxsize=QUEUE_CAP)
        self.overflowed = False

    def push(self, item: bytes | Notice) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            self.overflowed = True  # a stalled page: it gets fresh snapshots when it reads again

    def drain(self) -> list[bytes | Notice]:
        return [self.queue.get_nowait() for _ in range(self.queue.qsize())]


def frame(event: str, data: bytes) -> bytes:
    """One SSE event with no id (the same bytes for every page)."""
    return b"event: " + event.encode() + b"\r\ndata: " + data + b"\r\nretry: 1000\r\n\r\n"


def html_frame(event: str, html: str) -> bytes:
    """One SSE event carrying HTML: each line its own `data:` line (the browser joins them with newlines)."""
    return frame(event, "\r\ndata: ".join(html.splitlines()).encode())


class Streams:
    def __init__(self, painter: Painter) -> None:
        self.painter = painter
        self.subs: dict[str, set[Subscription]] = {}
        self.gate = asyncio.Semaphore(READS_AT_ONCE)
        self.fresh = asyncio.Semaphore(FRESH_AT_ONCE)  # not `gate`: an opening crowd never delays a change's frames

    @contextlib.contextmanager
    def open(self, sandbox: str, widgets: tuple[str, ...]) -> Iterator[Subscription]:
        sub = Subscription(widgets)
        subs = self.subs.setdefault(sandbox, set())  # in self.subs for as long as it holds `sub`
        subs.add(sub)
        try:
            yield sub
        finally:
            subs.discard(sub)
            if not subs:
                del self.subs[sandbox]

    def broadcast(self, notice: Notice, sandboxes: list[str] | None = None) -> None:
        """Hand `notice` to the streams of `sandboxes` (None: every stream)."""
        targets = self.subs if sandboxes is None else {s: self.subs[s] for s in sandboxes if s in self.subs}
        for subs in list(targets.values()):
            for sub in list(subs):
                sub.push(notice)

    async def deliver(self, sandbox: str, change: Change) -> None:
        """A closed batch of `sandbox`: each touched widget a page follows drawn once, with its effects
        (worded as they came); each page its frames."""
        subs = list(self.subs.get(sandbox, ()))
        drawn = {}
        for widget in sorted({w for sub in subs for w in sub.widgets} & change.widgets):
            try:
                async with self.gate, asyncio.timeout(READ_DEADLINE):
                    drawn[widget] = await self.painter.frame(sandbox, widget, change.effects.get(widget, ()))
            except ResponseError as exc:
                # a record of the sandbox holds another type: each page's own read says so, and reads again
                if not wrong_type(exc):
                    raise
        # pages showing the same widgets share one chunk: a class's thousand pages, one bytes object
        chunks: dict[tuple[str, ...], bytes] = {}
        for sub in subs:
            chunk = chunks.get(sub.widgets)
            if chunk is None:
                chunk = chunks[sub.widgets] = b"".join(drawn[w] for w in sub.widgets if w in drawn)
            if chunk:
                sub.push(chunk)


@dataclass
class _Open:
    change: Change = field(default_factory=Change)
    locked: set[str] = field(default_factory=set)  # widgets whose lock is held now
    timer: asyncio.TimerHandle | None = None


class Batches:
    def __init__(self, flush: Callable[[str, Change], Awaitable[None]]) -> None:
        self.flush = flush
        self.open: dict[str, _Open] = {}
        self.running: dict[str, asyncio.Task[None]] = {}

    def notice(self, sandbox: str, widget: str, queue: str, key: str, event: str) -> None:
        """One notification of a key of `widget` in `sandbox`."""
        batch = self.open.setdefault(sandbox, _Open())
        if key.endswith(":lock") and key.startswith("lab:"):
            if event == "set":
                batch.locked.add(widget)
                self._arm(sandbox, batch, HELD_MAX)
                return
            batch.locked.discard(widget)  # del, expired: the action is over
            if not batch.locked and batch.change.widgets:
                self._close(sandbox)
            return
        batch.change.widgets.add(widget)
        if key.startswith("emq:"):
            batch.change.effects.setdefault(widget, []).append(Worded(
                event, key.replace("{" + sandbox + ".", "{", 1), effects.describe(event, key),
                queue.partition(".")[2], time.time()))
        self._arm(sandbox, batch, HELD_MAX if batch.locked else QUIET)

    def _arm(self, sandbox: str, batch: _Open, delay: float) -> None:
        if batch.timer is None:
            batch.timer = asyncio.get_running_loop().call_later(delay, self._close, sandbox)

    def _close(self, sandbox: str) -> None:
        batch = self.open.pop(sandbox, None)
        if batch is None:
            return
        if batch.timer is not None:
            batch.timer.cancel()
        if batch.change.widgets:
            before = self.running.get(sandbox)
            self.running[sandbox] = asyncio.create_task(self._run(sandbox, batch.change, before))

    async def _run(self, sandbox: str, change: Change, before: asyncio.Task[None] | None) -> None:
        if before is not None:  # one flush at a time per sandbox, in order
            with contextlib.suppress(BaseException):
                await before
        try:
            await self.flush(sandbox, change)
        except Exception:
            log.exception("delivering a change of %s failed", sandbox)
        finally:
            if self.running.get(sandbox) is asyncio.current_task():
                self.running.pop(sandbox, None)

    async def stop(self) -> None:
        for batch in self.open.values():  # what was gathering is dropped
            if batch.timer is not None:
                batch.timer.cancel()
        self.open.clear()
        await stop_tasks(self.running.values())
