"""The per-sandbox fan-out: what the hub hands to the open streams.

Each open stream holds a `Subscription` (a bounded queue) filed under its
sandbox. A sandbox's key notices (effects, lab state, locks) are gathered
into one batch per action (`server.live.gather`); the closed batch is
composed into bytes once per widget list by the stream's own `Compose`
(effect frames and fresh snapshots), and each page gets one `Delivery`: a
thousand pages on one sandbox cost one read, one encoding and a thousand
queue puts per change, and no page wakes before the batch is ready. Other
notices (Valkey's status, resets, the class's moves) reach each stream as
they come. Nothing here talks to Valkey: `server.live.hub` feeds it, and the
snapshot reads go through `shared_read`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Required, TypedDict

from server.live.gather import Gather

if TYPE_CHECKING:
    from server.live.answers import Answer

log = logging.getLogger("emqlab.stream")

NoticeKind = Literal["effect", "state", "lock", "status", "reset", "room", "resync"]


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


GATHERED = ("effect", "state", "lock")  # a sandbox's key notices: gathered into batches (gather.py)

# What a page's stream is handed to compose a closed batch into its chunk
# (server/web/views/stream.py): effect frames and fresh snapshots, as bytes.
Compose = Callable[["Batch"], Awaitable[bytes]]


@dataclass
class Batch:
    """A sandbox's closed batch of key notices."""

    notices: list[Notice]
    sandbox: str = ""
    number: int = 0  # batches count up from 1 across the process (`Fanout.numbers`)
    # widget -> the snapshot an action offered it, or None: worked out once
    # for every page group of the sandbox (server/live/answers.py, `offered`)
    offers: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @property
    def seen(self) -> float:
        """When the last notice came: a read that starts later sees all of them."""
        return max(notice.seen for notice in self.notices)


@dataclass
class Delivery:
    """A batch as one page shows it, composed once for every page with the same widgets."""

    chunk: bytes


class Subscription:
    """One open stream's inbox: deliveries, and the notices that are the page's own business."""

    def __init__(self, sandbox: str, names: tuple[str, ...] = (), compose: Compose | None = None) -> None:
        self.sandbox = sandbox
        self.names = names
        self.compose = compose  # None: the batch's notices are handed on one by one
        self.queue: asyncio.Queue[Notice | Delivery] = asyncio.Queue(maxsize=QUEUE_CAP)
        self.overflowed = False

    def push(self, item: Notice | Delivery) -> None:
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            # A stalled client: drop, and resync it with a snapshot later.
            self.overflowed = True

    def drain(self) -> list[Notice | Delivery]:
        """Whatever came in besides the item just taken, without waiting."""
        items: list[Notice | Delivery] = []
        while not self.queue.empty():
            items.append(self.queue.get_nowait())
        return items


ReadKey = tuple[str, str]  # (sandbox, widget)


class Fanout:
    """The open streams by sandbox, and the snapshot reads they share."""

    def __init__(self) -> None:
        self.subs: dict[str, set[Subscription]] = {}
        # (sandbox, widget) -> (when the read started, the read): see shared_read.
        self.reads: dict[ReadKey, tuple[float, asyncio.Future[Any]]] = {}
        self.gathers: dict[str, Gather] = {}  # the sandboxes with a batch open
        # batches of one sandbox reach its pages in the order they closed
        self.delivering: dict[str, asyncio.Lock] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        # Batches are numbered across the process, never again the same number
        # (a sandbox whose pages all closed and opened again does not restart);
        # per sandbox with a page open, the last one handed on (`handed_on`).
        self.numbers = itertools.count(1)
        self.handed: dict[str, int] = {}
        self.handing: dict[str, asyncio.Event] = {}
        # sandbox -> this process's actions on it that marked a batch (server/live/answers.py)
        self.answers: dict[str, list[Answer]] = {}
        # Counts every break in what the hub hears (a subscription lost or made
        # anew, notifications judged off or restored): a mark made before a
        # break may have missed its own notices, so no batch takes its offer.
        self.epoch = 0

    @contextlib.asynccontextmanager
    async def listen(self, sandbox: str, names: tuple[str, ...] = (),
                     compose: Compose | None = None) -> AsyncIterator[Subscription]:
        sub = Subscription(sandbox, names, compose)
        self.subs.setdefault(sandbox, set()).add(sub)
        try:
            yield sub
        finally:
            group = self.subs.get(sandbox)
            if group is not None:
                group.discard(sub)
                if not group:
                    self.subs.pop(sandbox, None)
                    self.delivering.pop(sandbox, None)
                    self.handed.pop(sandbox, None)
                    waiting = self.handing.pop(sandbox, None)
                    if waiting is not None:
                        waiting.set()  # an answer waiting for this sandbox's pages waits no more
                    for key in [k for k in self.reads if k[0] == sandbox]:
                        self.reads.pop(key, None)

    def broadcast(self, notice: Notice, sandbox: str | None = None) -> None:
        """Hand `notice` to every stream of `sandbox` (None: of every sandbox).

        A sandbox's key notices are gathered into its open batch instead;
        everything else (status, resets, the class's moves) goes to each
        stream at once."""
        if sandbox and notice.kind in GATHERED:
            self.gather(sandbox).add(notice)
            return
        groups = [self.subs.get(sandbox, set())] if sandbox else list(self.subs.values())
        for group in groups:
            for sub in list(group):
                sub.push(notice)

    def gather(self, sandbox: str) -> Gather:
        """The sandbox's open batch; the first notice opens it and starts its delivery."""
        gather = self.gathers.get(sandbox)
        if gather is None:
            number = next(self.numbers)
            gather = self.gathers[sandbox] = Gather(number)
            for answer in self.answers.get(sandbox, ()):
                if answer.mark == 0:  # marked "the next batch": this one
                    answer.mark = number
            task = asyncio.create_task(self.deliver(sandbox, gather), name=f"emqlab-batch-{sandbox}")
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return gather

    async def deliver(self, sandbox: str, gather: Gather) -> None:
        """Close the batch, then hand it to every page of the sandbox: composed
        once per widget list (one snapshot read, one encoding), one queue put
        per page, in the order the sandbox's batches closed."""
        notices = await gather.closed()
        if self.gathers.get(sandbox) is gather:
            del self.gathers[sandbox]  # a notice from now on opens the next batch
        batch = Batch(notices, sandbox, gather.number)
        async with self.delivering.setdefault(sandbox, asyncio.Lock()):
            pages: dict[tuple[tuple[str, ...], bool], list[Subscription]] = {}
            for sub in list(self.subs.get(sandbox, ())):
                pages.setdefault((sub.names, sub.compose is None), []).append(sub)
            for subs in pages.values():
                await self.hand_on(batch, subs)
            if sandbox in self.subs:
                self.handed[sandbox] = gather.number
                waiting = self.handing.pop(sandbox, None)
                if waiting is not None:
                    waiting.set()

    def batch_mark(self, sandbox: str) -> int | None:
        """The number of the batch a write made now joins: the one open, or 0
        for the sandbox's next one (numbered when it opens, `gather`); None
        while no page of the sandbox is open."""
        if sandbox not in self.subs:
            return None
        gather = self.gathers.get(sandbox)
        return gather.number if gather is not None else 0

    async def handed_on(self, answer: Answer) -> bool:
        """Wait until the batch `answer` marked, or a later one of its sandbox,
        has been handed to the sandbox's pages; False when its last page
        closed first. The caller bounds the wait."""
        sandbox = answer.sandbox
        while answer.mark == 0 or self.handed.get(sandbox, 0) < answer.mark:
            if sandbox not in self.subs:
                return False
            await self.handing.setdefault(sandbox, asyncio.Event()).wait()
        return True

    async def hand_on(self, batch: Batch, subs: list[Subscription]) -> None:
        compose = subs[0].compose
        if compose is None:
            for sub in subs:
                for notice in batch.notices:
                    sub.push(notice)
            return
        try:
            delivery = Delivery(await compose(batch))
        except Exception:  # these pages read everything afresh instead
            log.exception("composing a batch for %s failed", subs[0].sandbox)
            for sub in subs:
                sub.push(Notice("resync"))
            return
        if delivery.chunk:
            for sub in subs:
                sub.push(delivery)

    async def stop_batches(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

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

    def seed(self, key: ReadKey, started: float, chunk: bytes) -> None:
        """A snapshot already read, as fresh as a read started at `started`
        (an action's own, server/live/answers.py): shared like a read."""
        entry = self.reads.get(key)
        if key[0] in self.subs and (entry is None or entry[0] < started):
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            done.set_result(chunk)
            self.reads[key] = (started, done)

    def _forget_failed(self, key: ReadKey, done: asyncio.Future[Any]) -> None:
        failed = done.cancelled() or done.exception() is not None
        if failed and self.reads.get(key, (0.0, None))[1] is done:
            self.reads.pop(key, None)
