"""The learners of a class: who joined (each by their own sandbox) and their names.

`lab:room:<CODE>:learners` is a zset of the learners' own sandbox ids, scored by
when they joined. A learner's display name lives with their own sandbox
(`lab:{<sandbox>}:meta` field `name`), so leaving and joining again keeps it,
and an instructor's reset of the sandbox keeps it too.
"""

from __future__ import annotations

import time
import unicodedata

from server.emq.wire import Conn, as_text
from server.sandboxes.sandbox import SANDBOX_RE

LEARNER_NAME_MAX = 40


def learners_key(code: str) -> str:
    return f"lab:room:{code}:learners"


def meta_key(sandbox: str) -> str:
    return f"lab:{{{sandbox}}}:meta"


class BadName(ValueError):
    """A display name that cannot be one (answered with a 400)."""


def clean_name(raw: object) -> str:
    """A learner's display name: 1 to 40 characters of text, spaces collapsed."""
    if not isinstance(raw, str) or not raw.strip():
        raise BadName(f"your name is required: 1 to {LEARNER_NAME_MAX} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") for ch in raw):
        raise BadName("your name cannot hold control characters")
    name = " ".join(raw.split())
    if len(name) > LEARNER_NAME_MAX:
        raise BadName(f"your name is at most {LEARNER_NAME_MAX} characters")
    return name


async def join(conn: Conn, code: str, visitor: str, name: str, ttl: int, meta_ttl: int) -> None:
    """Record a learner in the class, their name kept with their own sandbox."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.zadd(learners_key(code), {visitor: int(time.time() * 1000)})
        pipe.expire(learners_key(code), ttl)
        pipe.hset(meta_key(visitor), mapping={"name": name, "room": code})
        pipe.expire(meta_key(visitor), meta_ttl)
        await pipe.execute()


async def leave(conn: Conn, code: str, visitor: str) -> None:
    """Out of the class; the name stays with the sandbox for a later join."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.zrem(learners_key(code), visitor)
        pipe.hdel(meta_key(visitor), "room")
        await pipe.execute()


async def learner_ids(conn: Conn, code: str) -> list[str]:
    """The learners' own sandboxes, in the order they joined."""
    return [s for s in (as_text(m) for m in await conn.zrange(learners_key(code), 0, -1)) if SANDBOX_RE.match(s)]


async def name_of(conn: Conn, visitor: str) -> str:
    value = await conn.hget(meta_key(visitor), "name")
    return as_text(value) if value is not None else ""
