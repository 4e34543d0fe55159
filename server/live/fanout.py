"""The per-sandbox fan-out: what the hub hands to the open streams.

Each open stream holds a `Subscription` (a bounded queue of `Notice`s) filed
under its sandbox. The hub broadcasts a notice to one sandbox's streams or to
all of them, and the streams of one sandbox share their snapshot reads
(`shared_read`), so a thousand pages on one sandbox cost one read per change.
Nothing here talks to Valkey: `server.live.hub` feeds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Required, TypedDict

NoticeKind = Literal["effect", "state", "status", "reset", "room"]


class Status(TypedDict, total=False):
    """The `status` event a stream sends: what the hub knows of Valkey now."""

    valkey: Required[Literal["up", "down"]]
    notifications: Required[bool]
    memory: Literal["full", "ok"]  # the rest only while Valkey is up
    message: str  # a sentence for the page's banner, "" for none
    resync: bool  # on a notice: read every widget afresh


QUEUE_CAP = 2000  # notices one stream may lag behind before it is resynced instead


@dataclass
class Notice:
    """One thing a stream must react to."""

    kind: NoticeKind | str
    data: dict[str, Any] = field(default_factory=dict)
    # When the hub received it (monotonic): a read that starts later sees it.
    seen: float = field(default_factory=time.monotonic)
    # The widget owning the effect's queue ("" for none) and its encoded event,
    # worked out once for every stream the notice goes to.
    owner: str | None = field(default=None, repr=False, compare=False)
    encoded: dict[str, str] = field(default_factory=dict, repr=False, compare=False)


COALESCE_SECONDS = 0.015  # writes outside any action, gathered into one batch
LOCK_WAIT_SECONDS = 0.25  # an action holding its lock longer is read mid-way


def _lock_event(notice: Notice) -> str:
    return str(notice.data.get("event", "")) if notice.kind == "lock" else ""


class Subscription:
    """One open stream's inbox."""

    def __init__(self, sandbox: str) -> None:
        self.sandbox = sandbox
        self.queue: asyncio.Queue[Notice] = asyncio.Queue(maxsize=QUEUE_CAP)
        self.overflowed = False
        # set when a widget's lock is let go: an action is over (see `batch`)
        self.ended = asyncio.Event()

    def push(self, notice: Notice) -> None:
        try:
            self.queue.put_nowait(notice)
        except asyncio.QueueFull:
            # A stalled client: drop, and resync it with a snapshot later.
            self.overflowed = True
        if _lock_event(notice) in ("del", "expired"):
            self.ended.set()

    def _drain(self, batch: list[Notice]) -> None:
        while not self.queue.empty():
            batch.append(self.queue.get_nowait())

    async def batch(self, first: Notice) -> list[Notice]:
        """`first` and the notices that belong with it, read as one batch.

        A widget's action takes its lock first and deletes it last: while a
        lock the batch saw taken is held, the stream waits for an end (at most
        LOCK_WAIT_SECONDS), so it reads the widget once per action, as soon as
        the action is over. Writes outside any action (a console command) are
        gathered for COALESCE_SECONDS. One timer per batch, however many
        notices come in: a thousand streams wake once each.
        """
        batch = [first]
        self._drain(batch)
        held: set[str] = set()
        for notice in batch:
            event = _lock_event(notice)
            if event == "set":
                held.add(str(notice.data.get("queue")))
            elif event in ("del", "expired"):
                held.discard(str(notice.data.get("queue")))
        # the ends in hand are counted; only a later one may end the wait (no
        # await since the drain, so none can have slipped in between)
        self.ended.clear()
        if held:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LOCK_WAIT_SECONDS):
                    await self.ended.wait()
        elif not any(_lock_event(n) in ("del", "expired") for n in batch):
            await asyncio.sleep(COALESCE_SECONDS)
        self._drain(batch)
        return batch


ReadKey = tuple[str, str]  # (sandbox, widget)


class Fanout:
    """The open streams by sandbox, and the snapshot reads they share."""

    def __init__(self) -> None:
        self.subs: dict[str, set[Subscription]] = {}
        # (sandbox, widget) -> (when the read started, the read): see shared_read.
        self.reads: dict[ReadKey, tuple[float, asyncio.Future[Any]]] = {}

    @contextlib.asynccontextmanager
    async def listen(self, sandbox: str) -> AsyncIterator[Subscription]:
        sub = Subscription(sandbox)
        self.subs.setdefault(sandbox, set()).add(sub)
        try:
            yield sub
        finally:
            group = self.subs.get(sandbox)
            if group is not None:
                group.discard(sub)
                if not group:
                    self.subs.pop(sandbox, None)
                    for key in [k for k in self.reads if k[0] == sandbox]:
                        self.reads.pop(key, None)

    def broadcast(self, notice: Notice, sandbox: str | None = None) -> None:
        """Hand `notice` to every stream of `sandbox` (None: of every sandbox)."""
        groups = [self.subs.get(sandbox, set())] if sandbox else list(self.subs.values())
        for group in groups:
            for sub in list(group):
                sub.push(notice)

    async def shared_read(self, key: ReadKey, since: float, read: Callable[[], Awaitable[Any]]) -> Any:
        """One snapshot read for every stream of a sandbox that needs it.

        A stream needs a read of `key` that started after `since` (when the
        hub received the last notification the stream reacts to): such a read
        sees every write that notification announced. A read in flight or done
        that started at or after `since` is shared; otherwise a new one starts.
        A failed read is not kept: the next stream tries afresh.
        """
        entry = self.reads.get(key)
        if entry is None or entry[0] < since:
            entry = (time.monotonic(), asyncio.ensure_future(read()))
            entry[1].add_done_callback(lambda done: self._forget_failed(key, done))
            if key[0] in self.subs:
                self.reads[key] = entry
        if entry[1].done():
            return entry[1].result()
        # shielded: a stream that goes away must not cancel the others' read
        return await asyncio.shield(entry[1])

    def _forget_failed(self, key: ReadKey, done: asyncio.Future[Any]) -> None:
        failed = done.cancelled() or done.exception() is not None
        if failed and self.reads.get(key, (0.0, None))[1] is done:
            self.reads.pop(key, None)
