"""The console's transcript, kept in Valkey: the last commands and their replies.

The page keeps the transcript it shows, but a reload or a second tab reads it
back from here, so every view of one sandbox shows the same commands. One
list per visitor inside the sandbox the request acts in (a class sharing a
sandbox does not share its members' typing); it expires with the sandbox's
idle time, and a reset of the sandbox removes it with every other key.
"""

from __future__ import annotations

import json
from typing import Any

KEEP = 20  # commands kept, newest last


def transcript_key(sandbox: str, visitor: str) -> str:
    return f"lab:{{{sandbox}}}:console:{visitor}"


async def record(conn: Any, sandbox: str, visitor: str, entry: dict[str, Any], ttl: int) -> None:
    key = transcript_key(sandbox, visitor)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.rpush(key, json.dumps(entry, separators=(",", ":")))
        pipe.ltrim(key, -KEEP, -1)
        pipe.expire(key, ttl)
        await pipe.execute()


async def read(conn: Any, sandbox: str, visitor: str) -> list[dict[str, Any]]:
    entries = []
    for raw in await conn.lrange(transcript_key(sandbox, visitor), 0, -1):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries
