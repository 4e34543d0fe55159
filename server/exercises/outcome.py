"""What a run answers: each check's verdict in words, and the key pictures the checks judge.

``Graded.as_json`` is the 200 body, with ``"pictures"``: for each failing check, the keys just
before and after the learner's call it judged. A run's queues are ``<run>.<check>.<role>`` on the
grader; every sentence and picture shown passes through ``rename`` to the course's ``emq:{q}:…``.
A picture (``scripts/snapshot.lua``, run by the admin) is the judged keys, then what a scan of the
scenario's keys finds up to a bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias

import msgspec
from redis.asyncio import Redis

from server.emq.script import Script

SNAPSHOT: Final = Script.from_file(Path(__file__).resolve().parent / "scripts" / "snapshot.lua")
# A scenario of the course holds about fifteen keys of a few elements each: these
# (keys, elements per key, characters per element) only bound a runaway writer.
MOST_KEYS: Final = 40
WIDTH: Final = 32
ELEMENT_CHARS: Final = 256

# (the queue as the grader names it, the tag the course writes for it)
Names: TypeAlias = tuple[tuple[str, str], ...]
QUEUE = "q"  # a check's queue, as the scripts' headers write it
PARENT_QUEUE = "pq"  # a cross-queue flow's parent queue (flow_deliver.lua's header)

# A key's value as the picture shows it: a string's text, a hash's fields, a
# list's or a set's members, a sorted set's (member, score) pairs; None for
# a type the picture does not open (a stream, say).
Value: TypeAlias = str | dict[str, str] | list[str] | list[tuple[str, str]] | None


def rename(text: str, names: Names) -> str:
    """``text`` with each run queue's hashtag written as the course writes it."""
    for real, course in names:
        text = text.replace("{" + real + "}", "{" + course + "}")
    return text


def _renamed(picture: Picture, names: Names) -> object:
    """``picture`` as JSON (its keys' fields), renamed as encoded text: a queue name needs no
    escape in JSON, so each hashtag is found there as in the text it is part of."""
    return msgspec.json.decode(rename(msgspec.json.encode(picture.keys).decode(), names))


@dataclass(frozen=True, slots=True)
class KeyShot:
    """One key as Valkey held it: ``size`` is bytes (string) or elements;
    ``whole`` is False when ``value`` shows only the first part."""

    name: str
    type: str
    value: Value
    size: int
    whole: bool = True


@dataclass(frozen=True, slots=True)
class Picture:
    """The keys of one scenario at one moment, sorted by name."""

    keys: tuple[KeyShot, ...] = ()

    def find(self, name: str) -> KeyShot | None:
        return next((shot for shot in self.keys if shot.name == name), None)

    def text(self, name: str) -> str | None:
        """A string key's value; None when the key is missing or not a string."""
        shot = self.find(name)
        return shot.value if shot is not None and isinstance(shot.value, str) else None

    def field(self, name: str, field_name: str) -> str | None:
        """A hash key's field; None when the key is missing or not a hash."""
        shot = self.find(name)
        return shot.value.get(field_name) if shot is not None and isinstance(shot.value, dict) else None

    def holds(self, name: str, member: str) -> bool:
        """Whether a sorted set, a set or a list holds ``member``."""
        shot = self.find(name)
        values = shot.value if shot is not None and isinstance(shot.value, list) else []
        return any((item[0] if isinstance(item, tuple) else item) == member for item in values)

    def names(self) -> list[str]:
        return [shot.name for shot in self.keys]


def _text(value: Any) -> str:
    # The learner's script may write any bytes; shown as text, no more of one element than a panel draws.
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= ELEMENT_CHARS else text[:ELEMENT_CHARS] + "…"


def _shot(entry: Sequence[Any]) -> KeyShot:
    name, kind, size, raw = _text(entry[0]), _text(entry[1]), int(entry[2]), list(entry[3] or [])
    items = [_text(item) for item in raw]
    # a string's size is its bytes, any other's its elements; a type not opened shows nothing
    if kind == "string":
        return KeyShot(name, kind, items[0] if items else "", size, len(raw[0] if raw else b"") >= size)
    value: Value = None
    if kind == "hash":
        value = dict(zip(items[0::2], items[1::2]))
    elif kind == "zset":
        value = list(zip(items[0::2], items[1::2]))
    elif kind in ("list", "set"):
        value = sorted(items) if kind == "set" else items
    return KeyShot(name, kind, value, size, value is not None and len(value) >= size)


async def picture(admin: Redis, judged: Sequence[str], pattern: str) -> Picture:
    """The keys ``judged`` (those that exist) and the others ``pattern`` finds, in name order."""
    reply = await SNAPSHOT.run(admin, judged, [pattern, MOST_KEYS, WIDTH])
    return Picture(tuple(sorted((_shot(entry) for entry in reply or []), key=lambda shot: shot.name)))


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict: ``said`` is one sentence, passed or not. ``step`` names the
    learner's call the pictures frame; ``names`` the scene's queues, renamed in the JSON only."""

    name: str
    passed: bool
    said: str
    step: str | None = None
    before: Picture | None = None
    after: Picture | None = None
    names: Names = ()

    def picture_json(self) -> dict[str, object] | None:
        if self.passed or self.before is None or self.after is None:
            return None
        # the run's queues written as the course writes them
        return {"check": self.name, "step": self.step, "before": _renamed(self.before, self.names),
                "after": _renamed(self.after, self.names)}


@dataclass(frozen=True, slots=True)
class Graded:
    """A whole run: every check of the exercise, in the exercise's order."""

    exercise: str
    checks: tuple[CheckResult, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> int:
        return sum(1 for check in self.checks if check.passed)

    @property
    def total(self) -> int:
        return len(self.checks)

    @property
    def summary(self) -> str:
        """The run in a sentence: the exercise's own page and the dive's status line say it (one wording)."""
        return f"{self.passed} of {self.total} checks passed."

    def check(self, name: str) -> CheckResult:
        """The verdict of the check called ``name`` (KeyError when there is none)."""
        return {check.name: check for check in self.checks}[name]

    def failed(self) -> list[str]:
        return [check.name for check in self.checks if not check.passed]

    def as_json(self) -> dict[str, object]:
        return {"checks": [{"name": c.name, "passed": c.passed, "said": c.said} for c in self.checks],
                "passed": self.passed, "total": self.total,
                "pictures": [p for p in (check.picture_json() for check in self.checks) if p is not None]}
