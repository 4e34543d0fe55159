"""The open streams, by sandbox, and what each is handed: a closed batch becomes frames
once (each effect worded, each touched widget drawn once), however many pages watch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from server.live import effects
from server.live.batches import Change

QUEUE_CAP = 500  # items one stream may lag behind before it is resynced instead
READS_AT_ONCE = 64  # snapshot reads in flight for the streams: an overload queues here, not in the pool
# A page's fresh reads (its first drawing, a resync's, its presence) in flight at once: a class's
# thousand pages opening (or resyncing after a reset) together queue here. Unbounded, each waiting
# read took a pooled connection of its own, and the pool keeps every connection it ever opened.
FRESH_AT_ONCE = 64
READ_DEADLINE = 5.0  # seconds one read may take before the change is dropped (the page resyncs later)


class Worded(msgspec.Struct, frozen=True):
    """One keyspace notification of a change, in words (server/live/effects.py)."""

    event: str
    key: str  # as the learner writes it: no sandbox prefix
    words: str
    queue: str = ""  # the queue part under the sandbox
    at: float = 0.0


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

    def __init__(self, sandbox: str, widgets: tuple[str, ...]) -> None:
        self.sandbox, self.widgets = sandbox, widgets
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

    def watched(self, sandbox: str) -> bool:
        return sandbox in self.subs

    @contextlib.contextmanager
    def open(self, sandbox: str, widgets: tuple[str, ...]) -> Iterator[Subscription]:
        sub = Subscription(sandbox, widgets)
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
        """A closed batch of `sandbox`: each touched widget drawn once, with its effects; each page its frames."""
        subs = list(self.subs.get(sandbox, ()))
        followed = {w for sub in subs for w in sub.widgets} & change.widgets
        worded: dict[str, list[Worded]] = {}
        for effect in change.effects:
            if effect.widget in followed:
                worded.setdefault(effect.widget, []).append(Worded(
                    effect.event, effect.key.replace("{" + sandbox + ".", "{", 1),
                    effects.describe(effect.event, effect.key), effect.queue.partition(".")[2], effect.at))
        drawn = {}
        for widget in sorted(followed):
            async with self.gate, asyncio.timeout(READ_DEADLINE):
                drawn[widget] = await self.painter.frame(sandbox, widget, worded.get(widget, ()))
        # pages showing the same widgets share one chunk: a class's thousand pages, one bytes object
        chunks: dict[tuple[str, ...], bytes] = {}
        for sub in subs:
            chunk = chunks.get(sub.widgets)
            if chunk is None:
                chunk = chunks[sub.widgets] = b"".join(drawn[w] for w in sub.widgets if w in drawn)
            if chunk:
                sub.push(chunk)
