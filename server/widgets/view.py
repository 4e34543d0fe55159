"""What one read of a widget's queues found: its keys (name, type, value) and lab state.

`read.lua` reads the keys on the server; this module decodes its reply, and
says where a key holds a type the key grammar does not give it (a console can
make `pending` a string), so the widget says so and only Reset runs on it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from server.emq import keyspace

COUNTER_RE: Final = re.compile(r"-?[0-9]{1,15}")
# read.lua's CUT: a longer string, or element of a collection, is read as its first this many bytes
CUT_BYTES: Final = 1024
# A JSON object a widget remembered in its lab state (`turn.remember`), as decoded.
Kept = dict[str, object]
# A key's value as the page reads it: a string, a hash's fields, a zset's [member, score]
# pairs or a list's or a set's items (one array type: msgspec decodes one per union); None
# when the read cut it off.
KeyValue = str | int | dict[str, str] | list[object] | None


class KeyShape(msgspec.Struct, kw_only=True):
    """One key as a snapshot carries it (the key panel's row)."""

    name: str
    type: str
    value: KeyValue
    size: int
    cut: bool


class QueueShape(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One queue as a snapshot carries it: its keys and its state sets' members."""

    queue: str
    slot: int
    count: int  # the keys the read left out past its cap included
    keys: list[KeyShape]
    sets: dict[str, list[str]]  # the grammar's order: the page draws them as they are
    node: str | None = None  # on a cluster only


@dataclass(frozen=True)
class KeyView:
    name: str  # as Valkey holds it
    type: str
    value: Any  # a hash as a dict, a zset as [member, score] pairs; None when cut off
    size: int  # a string's bytes, a collection's elements
    shown: str  # the name as a learner writes it (no sandbox prefix)

    @property
    def cut(self) -> bool:
        """The read cut the value (a long string, a big collection)."""
        value = self.value.encode() if isinstance(self.value, str) else self.value
        return value is None or (isinstance(value, list | dict | bytes) and len(value) < self.size)

    def as_json(self) -> KeyShape:
        return KeyShape(name=self.shown, type=self.type, value=self.value, size=self.size, cut=self.cut)


@dataclass
class QueueView:
    queue: str  # the full queue name, `<sandbox>.<part>`
    part: str  # the part under the sandbox ("fanin", "outbox.orders")
    keys: list[KeyView] = field(default_factory=list)
    more: int = 0  # keys the read left out past its cap
    node: str | None = None  # on a cluster, the primary holding the queue's slot

    def __post_init__(self) -> None:
        self._by_name = {k.name: k for k in self.keys}

    @property
    def count(self) -> int:
        """The queue's keys, those past the read's cap too."""
        return len(self.keys) + self.more

    def get(self, suffix: str) -> KeyView | None:
        return self._by_name.get(keyspace.queue_key(self.queue, suffix))

    def row(self, job_id: str, sub: str = "") -> KeyView | None:
        return self._by_name.get(keyspace.job_key(self.queue, job_id) + sub)

    def fields(self, job_id: str, sub: str = "") -> dict[str, str]:
        found = self.row(job_id, sub)
        return found.value if found is not None and isinstance(found.value, dict) else {}

    def number(self, job_id: str, sub: str) -> int | None:
        """A counter such as `:dependencies`, or None when it does not exist."""
        found = self.row(job_id, sub)
        try:
            return int(found.value) if found is not None else None
        except (TypeError, ValueError):
            return None

    def _value(self, suffix: str, kind: str) -> Any:
        """The key's value when it holds `kind`, else an empty list."""
        found = self.get(suffix)
        return found.value if found is not None and found.type == kind and found.value else []

    def members(self, suffix: str) -> list[str]:
        return [m for m, _ in self._value(suffix, "zset")]

    def scores(self, suffix: str) -> dict[str, float]:
        return dict(self._value(suffix, "zset"))

    def items(self, suffix: str) -> list[str]:
        return list(self._value(suffix, "list"))

    def sets_of(self, job_id: str) -> list[str]:
        return [s for s in keyspace.STATE_SETS if job_id in self.members(s)]

    def misfit(self) -> str | None:
        """A sentence when a key of the grammar holds another type, or a row's
        counter is not a whole number (the widgets count with it), else None."""
        home = keyspace.base(self.queue)
        for key in self.keys:
            if not key.name.startswith(home):
                continue
            suffix = key.name[len(home):]
            want = keyspace.grammar_type(suffix)
            if want is not None and want != key.type:
                return (f"{key.shown} holds a {key.type} where the key grammar has a {want}: "
                        "the widget cannot read its scenario. Press Reset to land it again.")
            row = suffix.startswith("job:") and ":" not in suffix[4:]
            # a counter is absent, or a whole number a script counts with (the scripts' own rule,
            # includes/guards.lua stored_number_refusal: at most 15 digits)
            attempts = key.value.get("attempts") if row and isinstance(key.value, dict) else None
            if attempts is not None and not (isinstance(attempts, str) and COUNTER_RE.fullmatch(attempts)):
                return (f"{key.shown} holds attempts = {str(key.value['attempts'])[:40]!r}, not a whole number: "
                        "the token cannot be counted. Press Reset to land it again.")
        return None

    def as_json(self) -> QueueShape:
        return QueueShape(queue=self.part, slot=keyspace.queue_slot(self.queue), count=self.count,
                          keys=[k.as_json() for k in self.keys],
                          sets={name: self.members(name) for name in keyspace.STATE_SETS}, node=self.node)


@dataclass(frozen=True)
class Moment:
    views: dict[str, QueueView]  # by queue part, in the widget's order
    state: dict[str, str]

    @property
    def first(self) -> QueueView:
        return next(iter(self.views.values()))

    def view(self, part: str | None = None) -> QueueView:
        return self.first if part is None else self.views[part]

    def kept(self, field: str) -> dict[str, Any] | None:
        """A JSON object the widget remembered (`turn.remember`), or None: a
        half-written or older one must not break a picture."""
        try:
            value = json.loads(self.state.get(field) or "null")
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def all_keys(self) -> list[tuple[str, str, Any]]:
        """Every key of every queue as (name, type, value): equal lists, equal keys."""
        return [(k.name, k.type, k.value) for v in self.views.values() for k in v.keys]

    @property
    def landed(self) -> bool:
        return self.state.get("landed") == "1"

    def misfit(self) -> str | None:
        return next((found for v in self.views.values() if (found := v.misfit()) is not None), None)


def shown(text: str, sandbox: str) -> str:
    """`text` with every key and queue of the sandbox named as the course writes it."""
    return text.replace("{" + sandbox + ".", "{")


def decode(queue: str, part: str, sandbox: str, reply: Any,
           node: str | None = None) -> tuple[dict[str, str], QueueView]:
    """A `read.lua` reply as (lab state, the queue's view)."""
    raw_state, found, more = reply
    state = dict(zip(raw_state[::2], raw_state[1::2], strict=True))
    keys = [KeyView(name, kind, _shaped(kind, value), int(size), shown(name, sandbox))
            for name, kind, value, size in found]
    return state, QueueView(queue, part, keys, int(more), node)


def _shaped(kind: str, value: Any) -> Any:
    """A value as the page reads it: a hash an object, a zset [member, score] pairs,
    a set sorted; None when the read left it out (its budget spent)."""
    if value is None or value is False:
        return None
    if kind == "hash":
        return dict(zip(value[::2], value[1::2], strict=True))
    if kind == "zset":
        scores = [float(s) for s in value[1::2]]
        return [[m, int(s) if s.is_integer() else s] for m, s in zip(value[::2], scores, strict=True)]
    if kind == "set":
        return sorted(value)
    return value
