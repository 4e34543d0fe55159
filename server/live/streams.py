"""The open streams, by sandbox, and what each is handed.

A closed batch becomes frames once (each touched widget read once, each effect
worded once), so a thousand pages of a sandbox cost one read per change.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from server.live import effects
from server.live.batches import Change

QUEUE_CAP = 500  # items one stream may lag behind before it is resynced instead
READS_AT_ONCE = 64  # snapshot reads in flight for the streams: an overload queues here, not in the pool
READ_DEADLINE = 5.0  # seconds one read may take before the change is dropped (the page resyncs later)

# (sandbox, widget) -> the snapshot's SSE frame body (`event: snapshot` … as bytes)
Read = Callable[[str, str], Awaitable[bytes]]


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


class Streams:
    def __init__(self, read: Read) -> None:
        self.read = read
        self.subs: dict[str, set[Subscription]] = {}
        self.gate = asyncio.Semaphore(READS_AT_ONCE)

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
        """A closed batch of `sandbox`: each touched widget read once, each page its own frames."""
        subs = list(self.subs.get(sandbox, ()))
        followed = {w for sub in subs for w in sub.widgets} & change.widgets
        snapshots = {}
        for widget in sorted(followed):
            async with self.gate, asyncio.timeout(READ_DEADLINE):
                snapshots[widget] = await self.read(sandbox, widget)
        worded: dict[str, list[bytes]] = {}
        for effect in change.effects:
            if effect.widget in followed:
                data = {"widget": effect.widget, "queue": effect.queue.partition(".")[2],
                        "key": effect.key.replace("{" + sandbox + ".", "{", 1), "event": effect.event,
                        "at": effect.at, "words": effects.describe(effect.event, effect.key)}
                worded.setdefault(effect.widget, []).append(frame("effect", msgspec.json.encode(data)))
        # pages showing the same widgets share one chunk: a class's thousand pages, one bytes object
        chunks: dict[tuple[str, ...], bytes] = {}
        for sub in subs:
            chunk = chunks.get(sub.widgets)
            if chunk is None:
                parts = [f for w in sub.widgets for f in worded.get(w, [])]
                parts += [snapshots[w] for w in sub.widgets if w in snapshots]
                chunk = chunks[sub.widgets] = b"".join(parts)
            if chunk:
                sub.push(chunk)
