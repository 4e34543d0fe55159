"""The learners of a class: who joined (each by their own sandbox) and their names.

`lab:room:<CODE>:learners` is a zset of the learners' own sandbox ids, scored by
when they joined (ms). A learner's display name lives with their own sandbox
(`lab:{<sandbox>}:meta` field `name`), so leaving and joining again keeps it,
and an instructor's reset of the sandbox keeps it too.

A name is text a person writes: letters of any script, emoji sequences and
Persian or Indic words whose joiners (ZWJ U+200D, ZWNJ U+200C) are part of
the spelling. What is refused is what only hides or garbles: control and
format characters other than those two joiners (a right-to-left override
would turn the roster's other columns around), and long runs of combining
marks stacked on one letter ("Zalgo" text that paints over the rows above).
"""

from __future__ import annotations

import time
import unicodedata
from typing import Any

from server.emq.wire import Conn, as_text
from server.sandboxes.keys import meta_key
from server.sandboxes.sandbox import SANDBOX_RE

LEARNER_NAME_MAX = 40
JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ: spelling in Persian, Indic scripts and emoji sequences
# Vietnamese stacks two marks on a letter, Indic scripts three; more is decoration, not spelling.
MARKS_IN_A_ROW = 4
REFUSED = ("Cc", "Cf", "Cs", "Co", "Cn")
MARKS = ("Mn", "Me")

__all__ = ["LEARNER_NAME_MAX", "BadName", "clean_name", "join", "joined_at", "learner_ids", "learners_key",
           "leave", "meta_key", "name_of", "readable"]


def learners_key(code: str) -> str:
    return f"lab:room:{code}:learners"


class BadName(ValueError):
    """A display name that cannot be one (answered with a 400)."""


def readable(raw: str, limit: int, what: str) -> str:
    """`raw` as shown text: NFC, spaces collapsed, at most `limit` characters;
    BadName (in words, naming `what`) for anything that only hides or garbles."""
    text = " ".join(unicodedata.normalize("NFC", raw).split())
    run = 0
    for ch in text:
        kind = unicodedata.category(ch)
        if kind in REFUSED and ch not in JOINERS:
            raise BadName(f"{what} cannot hold control or invisible formatting characters")
        run = run + 1 if kind in MARKS else 0
        if run > MARKS_IN_A_ROW:
            raise BadName(f"{what} cannot stack more than {MARKS_IN_A_ROW} combining marks on one letter")
    if text and unicodedata.category(text[0]) in MARKS:
        raise BadName(f"{what} cannot start with a combining mark")
    if len(text) > limit:
        raise BadName(f"{what} is at most {limit} characters")
    return text


def clean_name(raw: object) -> str:
    """A learner's display name: 1 to 40 characters of readable text, spaces collapsed."""
    if not isinstance(raw, str) or not raw.strip():
        raise BadName(f"your name is required: 1 to {LEARNER_NAME_MAX} characters")
    name = readable(raw, LEARNER_NAME_MAX, "your name")
    if not name.strip("".join(JOINERS)):
        raise BadName(f"your name is required: 1 to {LEARNER_NAME_MAX} characters")
    return name


async def join(conn: Conn, code: str, visitor: str, name: str, ttl: int, meta_ttl: int) -> None:
    """Record a learner in the class, their name kept with their own sandbox.
    Joining again keeps the first join's time (NX): the roster's order and
    the results' `joined` column do not move."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.zadd(learners_key(code), {visitor: int(time.time() * 1000)}, nx=True)
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


async def joined_at(conn: Conn, code: str) -> dict[str, float]:
    """Each learner's sandbox -> when they joined (seconds since the epoch), in joining order."""
    found: Any = await conn.zrange(learners_key(code), 0, -1, withscores=True)
    return {as_text(m): float(s) / 1000 for m, s in found if SANDBOX_RE.match(as_text(m))}


async def name_of(conn: Conn, visitor: str) -> str:
    value = await conn.hget(meta_key(visitor), "name")
    return as_text(value) if value is not None else ""
