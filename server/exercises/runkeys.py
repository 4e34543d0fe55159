"""A run's keys on the grader: read as a picture, and swept away afterwards.

Every key of a run carries its run id inside the hashtag
(``emq:{<run>.<check>.<role>}:…``), so one MATCH pattern finds a scenario's
keys (``scenario_pattern``) and another all of the run's (``run_pattern``).
Both are read and removed by the grader's admin client, never by the run's
own user, whose ACL has no SCAN.

The picture is one round trip: ``scripts/snapshot.lua`` reads the keys the
checks judge first, then whatever else the scan finds, up to a bound, so a
script that wrote thousands of keys gets a short picture, not a slow grader.
It runs as the site runs every script of its own: a ``Script`` (EVALSHA,
loaded on NOSCRIPT), so a SCRIPT FLUSH on the grader costs it nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from redis.asyncio import Redis

from server.emq.script import Script
from server.exercises.outcome import KeyShot, Picture, Value, picture_of

SNAPSHOT: Final = Script.from_file(Path(__file__).resolve().parent / "scripts" / "snapshot.lua")

# How much of a scenario the picture shows: keys, elements per key (a
# string shows 64 bytes per element). A scenario of the course holds about
# fifteen keys of a few elements each, so these only bound a runaway writer.
MOST_KEYS: Final = 40
WIDTH: Final = 32
ELEMENT_CHARS: Final = 256
# How many keys one SCAN/UNLINK round of the sweep handles.
SWEEP_COUNT: Final = 500


def run_pattern(run_id: str) -> str:
    """Every key of the run (and the ACL key pattern of its user, less the ``~``)."""
    return "emq:{" + run_id + ".*"


def scenario_pattern(run_id: str, check: int) -> str:
    """Every key of one check's scenario."""
    return "emq:{" + f"{run_id}.{check}." + "*"


def _text(value: Any) -> str:
    # The learner's script may write any bytes; the picture shows them as text,
    # and no more of one element than a panel can draw.
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= ELEMENT_CHARS else text[:ELEMENT_CHARS] + "…"


def _shot(entry: Sequence[Any]) -> KeyShot:
    name, kind, size, raw = _text(entry[0]), _text(entry[1]), int(entry[2]), list(entry[3] or [])
    items = [_text(item) for item in raw]
    value: Value
    if kind == "string":
        value = items[0] if items else ""
        whole = len(raw[0] if raw else b"") >= size
    elif kind == "hash":
        value = dict(zip(items[0::2], items[1::2]))
        whole = len(value) >= size
    elif kind == "zset":
        value = list(zip(items[0::2], items[1::2]))
        whole = len(value) >= size
    elif kind in ("list", "set"):
        value = sorted(items) if kind == "set" else items
        whole = len(items) >= size
    else:
        value, whole = None, False
    return KeyShot(name=name, type=kind, value=value, size=size, whole=whole)


class RunKeys:
    """The admin side of one grader's keyspace: pictures and sweeps."""

    def __init__(self, admin: Redis) -> None:
        self.admin = admin

    async def picture(self, judged: Sequence[str], pattern: str) -> Picture:
        """The keys ``judged`` (those that exist) and the others ``pattern`` finds."""
        reply = await SNAPSHOT.run(self.admin, judged, [pattern, MOST_KEYS, WIDTH])
        return picture_of(_shot(entry) for entry in reply or [])

    async def sweep(self, pattern: str) -> int:
        """UNLINK every key matching ``pattern``; returns how many went."""
        removed = 0
        cursor = 0
        while True:
            cursor, found = await self.admin.scan(cursor=cursor, match=pattern, count=SWEEP_COUNT)
            if found:
                removed += int(await self.admin.unlink(*found))
            if int(cursor) == 0:
                return removed
