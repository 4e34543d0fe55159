"""Who has a page open, and which: each open stream writes `p:<stream>` = `<until>|<page>` in the
visitor's activity record on every beat, and removes it when it ends. An entry counts only until
its time, so one a killed site left stops counting within `lasts` s: no count can be left behind.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from pathlib import Path

import anyio

from server.emq.script import Script
from server.emq.wire import Conn
from server.sandboxes.keys import meta_key

PRESENCE = Script.from_file(Path(__file__).resolve().parent / "scripts" / "presence.lua")
PREFIX = "p:"


def beat_every(lasts: int) -> float:
    """Three beats to an entry's life: one late beat never drops a page that is open."""
    return max(1.0, lasts / 3)


def new_stream() -> str:
    return PREFIX + secrets.token_hex(6)


async def here(conn: Conn, visitor: str, stream: str, page: str | None, lasts: int, ttl: int) -> None:
    """The stream is open (its first write, and each beat); shielded: a page left while its stream
    opens would cancel the write halfway."""
    now = int(time.time())
    with anyio.CancelScope(shield=True):
        await PRESENCE.run(conn, [meta_key(visitor)], [stream, f"{now + lasts}|{page or ''}", now, ttl])


async def leave(conn: Conn, visitor: str, stream: str) -> None:
    """Shielded: a stream ends mostly by being cancelled, which would stop the write."""
    with anyio.CancelScope(shield=True):
        await conn.hdel(meta_key(visitor), stream)


def _entries(meta: Mapping[str, str], now: float) -> list[tuple[int, str]]:
    """(until, page) of each entry still counting, the latest first."""
    found = []
    for field, value in meta.items():
        if field.startswith(PREFIX):
            until, _, page = value.partition("|")
            if until.isdecimal() and int(until) > now:
                found.append((int(until), page))
    return sorted(found, reverse=True)


def online(meta: Mapping[str, str]) -> bool:
    return bool(_entries(meta, time.time()))


def page(meta: Mapping[str, str]) -> str | None:
    """The page of the stream heard from last (None: no page open)."""
    found = _entries(meta, time.time())
    return (found[0][1] or None) if found else None
