"""Who has a page open: every open stream counts itself on its visitor's sandbox.

The count and a heartbeat live in the visitor's own meta hash
(`lab:{<sandbox>}:meta`: `streams`, `beat` in ms), so any worker can say who
is online. A stream adds itself when it opens, beats every `EVERY` seconds
and takes itself off when it ends; a worker that dies without taking its
streams off stops beating, so "online" also needs a recent beat.
"""

from __future__ import annotations

import contextlib
import time

from redis.exceptions import RedisError

from server.emq.wire import Conn, Fields

EVERY = 5.0  # seconds between heartbeats of one open stream
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


async def beat(conn: Conn, visitor: str) -> None:
    with contextlib.suppress(RedisError, OSError):
        await conn.hset(meta_key(visitor), "beat", now_ms())


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
