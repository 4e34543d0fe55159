"""Who has a page open, and which: kept in the visitor's activity record.

A page's stream counts itself in `lab:{<visitor>}:meta` when it opens
(`streams` up by one, `page`, and `online_until`: the stream's lifetime and a
margin) and out when it ends. The browser reopens a stream at the end of its
lifetime, which renews `online_until`; a worker killed mid-stream leaves a
count that `online_until` outlives. No beat per online visitor: presence
costs one write when a page opens and one when it closes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import anyio

from server.emq.wire import Conn
from server.sandboxes.keys import meta_key


async def arrive(conn: Conn, visitor: str, page: str | None, lasts: int, ttl: int) -> None:
    key = meta_key(visitor)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hincrby(key, "streams", 1)
        pipe.hset(key, mapping={"online_until": int(time.time()) + lasts, "page": page or ""})
        pipe.expire(key, ttl)
        await pipe.execute()


async def leave(conn: Conn, visitor: str) -> None:
    """Counted out. Called as a page's stream ends, which is mostly because the
    page went away and its stream is being cancelled: the writes are shielded,
    or the cancellation (level-triggered in the stream's task group) would
    stop them and the page would stay "open" until `online_until`."""
    key = meta_key(visitor)
    with anyio.CancelScope(shield=True):
        if int(await conn.hincrby(key, "streams", -1)) <= 0:
            await conn.hset(key, mapping={"streams": 0, "page": ""})


def online(meta: Mapping[str, str]) -> bool:
    """Whether the record says a page of the visitor is open now."""
    streams, until = meta.get("streams", "0"), meta.get("online_until", "0")
    return streams.lstrip("-").isdecimal() and int(streams) > 0 and until.isdecimal() and int(until) > time.time()


def page(meta: Mapping[str, str]) -> str | None:
    """The page the visitor has open (None when none is)."""
    return (meta.get("page") or None) if online(meta) else None
