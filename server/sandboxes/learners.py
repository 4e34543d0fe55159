"""The learners of a class (a zset of their sandboxes, by join time) and their names, kept with the
sandbox (`meta` field `name`). Refused in a name is only what hides or garbles: format characters
(a right-to-left override turns the roster around) and stacks of combining marks."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from typing import Any

from server.emq.wire import Conn, as_dict, as_text
from server.refusal import Refusal
from server.sandboxes.keys import learners_key as learners_key
from server.sandboxes.keys import meta_key
from server.sandboxes.sandbox import SANDBOX_RE
from server.valkey.reply import wrong_type

LEARNER_NAME_MAX = 40
JOINERS = frozenset("\u200c\u200d")  # ZWNJ, ZWJ: spelling in Persian, Indic scripts and emoji sequences
# Vietnamese stacks two marks on a letter, Indic scripts three; more is decoration, not spelling.
MARKS_IN_A_ROW = 4
REFUSED = ("Cc", "Cf", "Cs", "Co", "Cn")
MARKS = ("Mn", "Me")


class BadName(Refusal, ValueError):
    """A display name that cannot be one (400)."""


def readable(raw: str, limit: int, what: str) -> str:
    """`raw` as shown text (NFC, spaces collapsed, at most `limit`); BadName naming `what` if not."""
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
    name = readable(raw, LEARNER_NAME_MAX, "your name") if isinstance(raw, str) else ""
    if not name.strip("".join(JOINERS)):  # blank, or joiners alone
        raise BadName(f"your name is required: 1 to {LEARNER_NAME_MAX} characters")
    return name


async def join(conn: Conn, code: str, visitor: str, name: str, ttl: int, meta_ttl: int) -> None:
    """Joining again keeps the first join's time (NX): the roster's order does not move."""
    for _ in range(2):  # once more after an activity record of another type started again
        async with conn.pipeline(transaction=False) as pipe:
            pipe.zadd(learners_key(code), {visitor: int(time.time() * 1000)}, nx=True)
            pipe.expire(learners_key(code), ttl)
            pipe.hset(meta_key(visitor), mapping={"name": name, "room": code})
            pipe.expire(meta_key(visitor), meta_ttl)
            replies = await pipe.execute(raise_on_error=False)
        if not await _fresh_record(conn, visitor, replies, 2):
            return


async def leave(conn: Conn, code: str, visitor: str) -> None:
    """Out of the class; the name stays with the sandbox for a later join."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.zrem(learners_key(code), visitor)
        pipe.hdel(meta_key(visitor), "room")
        await _fresh_record(conn, visitor, await pipe.execute(raise_on_error=False), 1)


async def _fresh_record(conn: Conn, visitor: str, replies: Sequence[object], meta: int) -> bool:
    """Raise the first error among `replies`, but for an activity record of another type (the reply at
    `meta`): it starts again, as in the site's scripts (includes/fresh_record.lua); True then."""
    if wrong_type(replies[meta]):
        await conn.delete(meta_key(visitor))
        return True
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply
    return False


async def learner_ids(conn: Conn, code: str) -> list[str]:
    return list(await joined_at(conn, code))


async def joined_at(conn: Conn, code: str) -> dict[str, float]:
    """Each learner's sandbox -> when they joined (s), in joining order."""
    found: Any = await conn.zrange(learners_key(code), 0, -1, withscores=True)
    return {as_text(m): float(s) / 1000 for m, s in found if SANDBOX_RE.match(as_text(m))}


async def records(conn: Conn, sandboxes: Sequence[str]) -> list[dict[str, str]]:
    """Their activity records (name, class, page, widget). One of another type (an operator's command, a
    fault: no learner writes one) reads as none, not a refusal of every page that lists it (the
    instructor's home lists every recent sandbox); the next action's record starts it again (record.lua)."""
    async with conn.pipeline(transaction=False) as pipe:  # none to send: no round trip
        for sandbox in sandboxes:
            pipe.hgetall(meta_key(sandbox))
        return hashes(await pipe.execute(raise_on_error=False))


def hashes(replies: Sequence[Any]) -> list[dict[str, str]]:
    """HGETALL replies decoded, one of another type read as none; any other error is raised."""
    for reply in replies:
        if isinstance(reply, Exception) and not wrong_type(reply):
            raise reply
    return [{} if wrong_type(reply) else as_dict(reply) for reply in replies]


async def name_of(conn: Conn, visitor: str) -> str:
    return (await records(conn, [visitor]))[0].get("name", "")
