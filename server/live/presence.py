"""Who has a page open: every open stream counts itself on its visitor's sandbox.

The count and a heartbeat live in the visitor's own meta hash
(`lab:{<sandbox>}:meta`: `streams`, `beat` in ms), so any worker can say who
is online. A stream adds itself when it opens and takes itself off when it
ends; while any stream of a visitor is open on this worker, the worker's
`Attendance` beats for that visitor every `EVERY` seconds, all visitors in
one pipeline (a thousand open pages are one write per visitor, not a write
per page per beat, and no stream wakes to beat). A worker that dies without
taking its streams off stops beating, so "online" also needs a recent beat.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator

from redis.exceptions import RedisError

from server.emq.wire import Conn, Fields

log = logging.getLogger("emqlab.stream")

EVERY = 5.0  # seconds between heartbeats of a visitor with a stream open
ONLINE_WITHIN = 2.5 * EVERY  # a beat this recent (and a stream counted) is "online"


def meta_key(sandbox: str) -> str:
    return f"lab:{{{sandbox}}}:meta"


def now_ms() -> int:
    return int(time.time() * 1000)


async def arrive(conn: Conn, visitor: str, page: str | None) -> None:
    """A stream of this visitor opened (on `page`, when the Referer names one)."""
    fields: Fields = {"beat": now_ms()}
    if page:
        fields["page"] = page
    with contextlib.suppress(RedisError, OSError):
        async with conn.pipeline(transaction=False) as pipe:
            pipe.hincrby(meta_key(visitor), "streams", 1)
            pipe.hset(meta_key(visitor), mapping=fields)
            await pipe.execute()


async def beat(conn: Conn, visitors: list[str]) -> None:
    """One heartbeat for each visitor, in one pipeline."""
    if not visitors:
        return
    at = now_ms()
    with contextlib.suppress(RedisError, OSError):
        async with conn.pipeline(transaction=False) as pipe:
            for visitor in visitors:
                pipe.hset(meta_key(visitor), "beat", at)
            await pipe.execute()


async def depart(conn: Conn, visitor: str) -> None:
    """A stream ended; best effort (a lost one only ages out of "online")."""
    with contextlib.suppress(RedisError, OSError):
        left = int(await conn.hincrby(meta_key(visitor), "streams", -1))
        if left < 0:
            await conn.hset(meta_key(visitor), "streams", 0)


def is_online(meta: dict[str, str], now: int | None = None) -> bool:
    """Online: at least one stream counted, and a beat within ONLINE_WITHIN."""
    try:
        streams = int(meta.get("streams") or 0)
        last = int(meta.get("beat") or 0)
    except ValueError:
        return False
    now = now_ms() if now is None else now
    return streams > 0 and now - last <= ONLINE_WITHIN * 1000


class Attendance:
    """The visitors with a stream open on this worker, and the one task that beats for them."""

    def __init__(self, conn: Conn, every: float = EVERY) -> None:
        self.conn = conn
        self.every = every
        self.open: collections.Counter[str] = collections.Counter()
        self.task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def present(self, visitor: str, page: str | None) -> AsyncIterator[None]:
        """Counted on `visitor`'s sandbox from the arrival write until the departure write."""
        await arrive(self.conn, visitor, page)
        self.open[visitor] += 1
        try:
            yield
        finally:
            self.open[visitor] -= 1
            if self.open[visitor] <= 0:
                del self.open[visitor]
            await depart(self.conn, visitor)

    async def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name="emqlab-attendance")

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await beat(self.conn, list(self.open))
            except Exception:
                log.exception("presence beat failed")
