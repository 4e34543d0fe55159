"""The console's transcript in Valkey, read back by a reload or a second tab: one list per visitor
in the sandbox (a class sharing one does not share its members' typing), expiring with it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from server.emq.wire import Conn, as_text

KEEP = 20  # commands kept, newest last
KEEP_LINES = 40  # reply lines kept per command (the page showed them all when it ran)


def transcript_key(sandbox: str, visitor: str) -> str:
    return f"lab:{{{sandbox}}}:console:{visitor}"


def visitors_key(sandbox: str) -> str:
    """Who has a transcript in `sandbox`: how a reset finds them without a scan."""
    return f"lab:{{{sandbox}}}:consoles"


async def keys_of(conn: Conn, sandbox: str) -> list[str]:
    """The visitors' set and every transcript of `sandbox`: what a reset or a removal deletes."""
    visitors = [as_text(v) for v in await conn.smembers(visitors_key(sandbox))]
    return [visitors_key(sandbox), *(transcript_key(sandbox, v) for v in dict.fromkeys([sandbox, *visitors]))]


def kept(entry: Mapping[str, Any]) -> dict[str, Any]:
    lines = list(entry.get("reply_lines", []))
    if len(lines) > KEEP_LINES:
        left = len(lines) - KEEP_LINES
        lines = [*lines[:KEEP_LINES], f"(… {left} more lines when it ran; run it again to see them)"]
    return {**entry, "reply_lines": lines}


async def record(conn: Conn, sandbox: str, visitor: str, entry: Mapping[str, Any], ttl: int) -> None:
    key = transcript_key(sandbox, visitor)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.rpush(key, json.dumps(kept(entry), separators=(",", ":")))
        pipe.ltrim(key, -KEEP, -1)
        pipe.expire(key, ttl)
        pipe.sadd(visitors_key(sandbox), visitor)
        pipe.expire(visitors_key(sandbox), ttl)
        await pipe.execute()


async def read(conn: Conn, sandbox: str, visitor: str) -> list[dict[str, Any]]:
    entries = []
    for raw in await conn.lrange(transcript_key(sandbox, visitor), 0, -1):
        with contextlib.suppress(ValueError):  # an entry that does not decode is left out
            entries.append(json.loads(raw))
    return [entry for entry in entries if isinstance(entry, dict)]
