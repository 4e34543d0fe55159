"""Who has a page open, and which: kept in the visitor's activity record.

A page's stream counts itself in (`streams`, `page`, `online_until`) when it
opens and out when it ends: no beat per visitor. `online_until` outlives the
count of a worker killed mid-stream.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import anyio

from server.emq.wire import Conn
from server.sandboxes.keys import meta_key


async def arrive(conn: Conn, visitor: str, page: str | None, lasts: int, ttl: int) -> None:
    """Shielded, as `leave` is: a page left while its stream opens (a class's learner
    sent on from the room page) cancelled the stream after Valkey counted it in and
    before its `leave` was armed, and the visitor stayed online on that page for ever."""
    key = meta_key(visitor)
    with anyio.CancelScope(shield=True):
        async with conn.pipeline(transaction=False) as pipe:
            pipe.hincrby(key, "streams", 1)
            pipe.hset(key, mapping={"online_until": int(time.time()) + lasts, "page": page or ""})
            pipe.expire(key, ttl)
            await pipe.execute()


async def leave(conn: Conn, visitor: str) -> None:
    """Shielded: a stream ends mostly by being cancelled, which would stop the writes."""
    key = meta_key(visitor)
    with anyio.CancelScope(shield=True):
        if int(await conn.hincrby(key, "streams", -1)) <= 0:
            await conn.hset(key, mapping={"streams": 0, "page": ""})


def online(meta: Mapping[str, str]) -> bool:
    streams, until = meta.get("streams", "0"), meta.get("online_until", "0")
    return streams.lstrip("-").isdecimal() and int(streams) > 0 and until.isdecimal() and int(until) > time.time()


def page(meta: Mapping[str, str]) -> str | None:
    return (meta.get("page") or None) if online(meta) else None
