"""A run's keys on the grader: read as a picture, and swept away afterwards.

Every key of a run has the run id in its hashtag, so one MATCH pattern finds a scenario's keys and
another the whole run's, read and removed by the admin (the run's user has no SCAN). The picture
(``scripts/snapshot.lua``) is the judged keys, then what the scan finds up to a bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from redis.asyncio import Redis

from server.emq.script import Script
from server.exercises.outcome import KeyShot, Picture, Value

SNAPSHOT: Final = Script.from_file(Path(__file__).resolve().parent / "scripts" / "snapshot.lua")

# A scenario of the course holds about fifteen keys of a few elements each: these
# (keys, elements per key, characters per element) only bound a runaway writer.
MOST_KEYS: Final = 40
WIDTH: Final = 32
ELEMENT_CHARS: Final = 256
SWEEP_COUNT: Final = 500  # keys per SCAN/UNLINK round of the sweep


def run_pattern(run_id: str) -> str:
    """Every key of the run (and the ACL key pattern of its user, less the ``~``)."""
    return "emq:{" + run_id + ".*"


def scenario_pattern(run_id: str, check: int) -> str:
    return "emq:{" + f"{run_id}.{check}." + "*"


def _text(value: Any) -> str:
    # The learner's script may write any bytes; shown as text, no more of one element than a panel draws.
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


async def picture(admin: Redis, judged: Sequence[str], pattern: str) -> Picture:
    """The keys ``judged`` (those that exist) and the others ``pattern`` finds, in name order."""
    reply = await SNAPSHOT.run(admin, judged, [pattern, MOST_KEYS, WIDTH])
    return Picture(tuple(sorted((_shot(entry) for entry in reply or []), key=lambda shot: shot.name)))


async def sweep(admin: Redis, pattern: str) -> None:
    """UNLINK every key matching ``pattern``."""
    cursor = 0
    while True:
        cursor, found = await admin.scan(cursor=cursor, match=pattern, count=SWEEP_COUNT)
        if found:
            await admin.unlink(*found)
        if int(cursor) == 0:
            return
