"""The live stream: keyspace notifications in, Server-Sent Events out.

One `Hub` per process holds ONE pattern subscription on Valkey
(`__keyspace@*__:emq:*` and the lab's own event channel) and hands each
notification to the streams of the sandbox named inside the key's hashtag, so
a thousand open pages cost one Valkey connection, not a thousand. When Valkey
goes away the hub says so to every stream, reconnects on its own, enables
keyspace notifications again (a restarted server has forgotten them) and tells
the streams to resync with a fresh snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger("emqlab.stream")

NOTIFY_FLAGS = "KA"
EVENTS_CHANNEL = "emqlab:events"
KEYSPACE_PATTERN = "__keyspace@*__:emq:*"


async def enable_notifications(conn: Any) -> bool:
    """Turn keyspace notifications on; False when the server refuses CONFIG."""
    try:
        current = await conn.config_get("notify-keyspace-events")
        flags = current.get("notify-keyspace-events", "") if isinstance(current, dict) else ""
        if isinstance(flags, bytes):
            flags = flags.decode()
        if "K" in flags and ("A" in flags or {"g", "h", "z", "l", "$"} <= set(flags)):
            return True
        await conn.config_set("notify-keyspace-events", NOTIFY_FLAGS)
        return True
    except RedisError as exc:
        log.warning("cannot enable keyspace notifications (%s): the effects log stays empty", exc)
        return False


@dataclass
class Notice:
    """One thing a stream must react to."""

    kind: str  # effect | status | reset
    data: dict[str, Any] = field(default_factory=dict)
    # When the hub received it (monotonic): a read that starts later sees it.
    seen: float = field(default_factory=time.monotonic)
    # The widget owning the effect's queue ("" for none) and its encoded event,
    # worked out once for every stream the notice goes to.
    owner: str | None = field(default=None, repr=False, compare=False)
    encoded: dict[str, str] = field(default_factory=dict, repr=False, compare=False)


class Subscription:
    def __init__(self, sandbox: str) -> None:
        self.sandbox = sandbox
        self.queue: asyncio.Queue[Notice] = asyncio.Queue(maxsize=2000)
        self.overflowed = False

    def push(self, notice: Notice) -> None:
        try:
            self.queue.put_nowait(notice)
        except asyncio.QueueFull:
            # A stalled client: drop, and resync it with a snapshot later.
            self.overflowed = True


def parse_channel(channel: str) -> tuple[str, str, str] | None:
    """`__keyspace@0__:emq:{s1.fanin}:job:X` -> (sandbox, queue, key)."""
    _, _, key = channel.partition("__:")
    if not key.startswith("emq:{"):
        return None
    end = key.find("}", 5)
    if end < 0:
        return None
    queue = key[5:end]
    sandbox, dot, _ = queue.partition(".")
    if not dot:
        return None
    return sandbox, queue, key


class Hub:
    def __init__(self, url: str) -> None:
        self.url = url
        self.subs: dict[str, set[Subscription]] = {}
        self.up = False
        self.notifications_on = False
        self.task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()
        # (sandbox, widget) -> (when the read started, the read): see shared_read.
        self.reads: dict[tuple[str, str], tuple[float, asyncio.Future[Any]]] = {}

    async def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name="emqlab-hub")

    async def stop(self) -> None:
        if self.task:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

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

    async def shared_read(self, key: tuple[str, str], since: float, read: Callable[[], Awaitable[Any]]) -> Any:
        """One snapshot read for every stream of a sandbox that needs it.

        A stream needs a read of `key` that started after `since` (when the
        hub received the last notification the stream reacts to): such a read
        sees every write that notification announced. A read in flight or done
        that started at or after `since` is shared; otherwise a new one starts.
        A thousand pages on one sandbox then cost one read per change, not a
        thousand. A failed read is not kept: the next stream tries afresh.
        """
        entry = self.reads.get(key)
        if entry is None or entry[0] < since:
            started = time.monotonic()
            future = asyncio.ensure_future(read())

            def forget(done: asyncio.Future[Any], key: tuple[str, str] = key) -> None:
                if done.cancelled() or done.exception() is not None:
                    if self.reads.get(key, (0.0, None))[1] is done:
                        self.reads.pop(key, None)

            future.add_done_callback(forget)
            entry = (started, future)
            if key[0] in self.subs:
                self.reads[key] = entry
        if entry[1].done():
            return entry[1].result()
        # shielded: a stream that goes away must not cancel the others' read
        return await asyncio.shield(entry[1])

    def broadcast(self, notice: Notice, sandbox: str | None = None) -> None:
        groups = [self.subs.get(sandbox, set())] if sandbox else list(self.subs.values())
        for group in groups:
            for sub in list(group):
                sub.push(notice)

    def set_up(self, up: bool) -> None:
        if up != self.up:
            self.up = up
            self.broadcast(Notice("status", {"valkey": "up" if up else "down"}))

    async def run(self) -> None:
        while True:
            client = aioredis.Redis.from_url(self.url, decode_responses=True, socket_connect_timeout=1)
            try:
                self.notifications_on = await enable_notifications(client)
                async with client.pubsub() as pubsub:
                    await pubsub.psubscribe(KEYSPACE_PATTERN)
                    await pubsub.subscribe(EVENTS_CHANNEL)
                    self.set_up(True)
                    async for message in pubsub.listen():
                        self.dispatch(message)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                log.info("valkey unreachable for the live stream: %s", exc)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            self.set_up(False)
            await asyncio.sleep(0.25)

    def dispatch(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "pmessage":
            parsed = parse_channel(message["channel"])
            if parsed is None:
                return
            sandbox, queue, key = parsed
            if sandbox in self.subs:
                self.broadcast(
                    Notice("effect", {"queue": queue, "key": key, "event": message["data"], "at": time.time()}),
                    sandbox,
                )
        elif kind == "message" and message.get("channel") == EVENTS_CHANNEL:
            try:
                event = json.loads(message["data"])
            except (TypeError, ValueError):
                return
            if event.get("type") == "reset":
                targets = event.get("sandboxes")
                notice = Notice("reset", {"by": event.get("by", "instructor")})
                if targets is None:
                    self.broadcast(notice)
                else:
                    for sandbox in targets:
                        self.broadcast(notice, sandbox)


async def publish_reset(conn: Any, sandboxes: list[str] | None, by: str = "instructor") -> None:
    """Tell every worker's hub that these sandboxes (None: all) were reset."""
    await conn.publish(EVENTS_CHANNEL, json.dumps({"type": "reset", "sandboxes": sandboxes, "by": by}))
