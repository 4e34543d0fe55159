"""Read the real keys of a widget's queues: name, type and value.

A snapshot is what every key panel draws. Each queue is read by ONE call of
`scripts/queue_keys.lua` on the queue's own slot, which finds the names on
the server (the queue's keys, the rows and subkeys of every id the widget
knows of or a state set holds, and the lab's index of extra keys) and
returns the existing ones with their values, together with the widget's lab
state hash, which shares the queue's hashtag. Nothing is probed over the
wire, and the same script, in its other modes, records an action's outcome
before reading (`finish`) and removes the queue's keys for Reset (`clear`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.emq import keyspace
from server.emq.wire import Conn, Fields
from server.valkey.connect import node_of
from server.valkey.scripts import Call, SiteScript, execute

QUEUE_SUFFIXES = (
    "pending",
    "active",
    "schedule",
    "dead",
    "flow:outbox",
    "flow:outbox:poison",
    "flow:outbox:head",
    "metrics:completed",
)


def _text(value: Any) -> Any:
    kind = type(value)
    if kind is str:  # the site's client decodes replies: the common case, first
        return value
    if kind is list and all(type(v) is str for v in value):
        return value  # a decoded array: nothing to convert (most of a snapshot's values)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [_text(v) for v in value]
    if isinstance(value, dict):
        return {_text(k): _text(v) for k, v in value.items()}
    return value


@dataclass
class KeyView:
    name: str
    type: str
    value: Any
    queue: str

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "value": self.value, "queue": self.queue}


@dataclass
class QueueView:
    queue: str
    slot: int
    keys: list[KeyView] = field(default_factory=list)
    # On a cluster: "host:port" of the primary holding the queue's slot.
    node: str | None = None
    _by_name: dict[str, KeyView] | None = field(default=None, repr=False, compare=False)
    # each state set's members, read once per view (a click asks some thirty times)
    _members: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)

    def _index(self) -> dict[str, KeyView]:
        # an index by name, built on the first lookup, and again when keys
        # were added (the members read from the old one go with it)
        if self._by_name is None or len(self._by_name) != len(self.keys):
            self._by_name = {k.name: k for k in self.keys}
            self._members = {}
        return self._by_name

    def named(self, name: str) -> KeyView | None:
        return self._index().get(name)

    def get(self, suffix: str) -> KeyView | None:
        return self.named(keyspace.queue_key(self.queue, suffix))

    def row(self, job_id: str, sub: str = "") -> KeyView | None:
        return self.named(keyspace.job_key(self.queue, job_id) + sub)

    def members(self, suffix: str) -> list[str]:
        return list(self._set(suffix))

    def sets_of(self, job_id: str) -> list[str]:
        """The state sets holding `job_id` (none, for a held parent)."""
        return [s for s in keyspace.STATE_SETS if job_id in self._set(s)]

    def _set(self, suffix: str) -> list[str]:
        index = self._index()  # first: a rebuilt index empties the members read before
        found = self._members.get(suffix)
        if found is None:
            key = index.get(keyspace.queue_key(self.queue, suffix))
            found = self._members[suffix] = [m for m, _ in key.value] if key else []
        return found

    def as_json(self) -> dict[str, Any]:
        found = {"queue": self.queue, "slot": self.slot, "count": len(self.keys),
                 "keys": [k.as_json() for k in self.keys],
                 # the state sets' members, in the grammar's order: the page draws them as they are
                 "sets": {name: self.members(name) for name in keyspace.STATE_SETS}}
        if self.node is not None:
            found["node"] = self.node
        return found


SCRIPTS = Path(__file__).resolve().parent / "scripts"
QUEUE_KEYS = SiteScript(SCRIPTS / "queue_keys.lua")
RELEASE = SiteScript(SCRIPTS / "release.lua")  # the lock let go without a record



def state_key(queue: str) -> str:
    """The lab hash of the widget whose first queue is `queue` (same slot)."""
    return f"lab:{{{queue}}}:state"


def lock_key(queue: str) -> str:
    return f"lab:{{{queue}}}:lock"


def index_key(queue: str) -> str:
    """Extra key names of `queue` that no rule finds (e.g. typed in a console)."""
    return f"lab:{{{queue}}}:index"


def _gated(job_ids: list[str]) -> list[str]:
    return [i for i in dict.fromkeys(job_ids) if keyspace.ID_RE.fullmatch(i)]


def call(queue: str, job_ids: list[str], mode: str = "read", token: str = "", outcome: str = "",
         fields: str = "", readings: str = "", drops: str = "", proof: str = "") -> Call:
    """The queue_keys call for `queue` (queue it on a pipeline, or run it);
    the arguments are the script's ARGV, named in its header."""
    keys = [state_key(queue), lock_key(queue)]
    args = [keyspace.base(queue), mode, token, outcome, fields, readings, drops, proof, *_gated(job_ids)]
    return QUEUE_KEYS, keys, args


def decode(conn: Conn, queue: str, reply: Any) -> tuple[dict[str, str], QueueView]:
    """A read or finish reply as (lab state, the queue's view)."""
    raw_state, found = reply
    state = {str(_text(k)): str(_text(v)) for k, v in zip(raw_state[::2], raw_state[1::2])}
    home = keyspace.queue_key(queue, "")
    view = QueueView(queue=queue, slot=keyspace.hash_slot(home), node=node_of(conn, home))
    for name, raw_kind, raw_value in found:
        kind = _text(raw_kind)
        view.keys.append(KeyView(name=_text(name), type=kind, value=_shaped(kind, _text(raw_value)), queue=queue))
    return state, view


def _shaped(kind: str, value: Any) -> Any:
    """A key's value as the page reads it: a hash as an object, a zset as
    [member, score] pairs, a set sorted; a list or a string as it is."""
    if kind == "hash":
        return dict(zip(value[::2], value[1::2], strict=True))
    if kind == "zset":
        return [[m, _score(s)] for m, s in zip(value[::2], value[1::2], strict=True)]
    if kind == "set":
        return sorted(value)
    return value


def _score(raw: str) -> int | float | str:
    number = float(raw)
    return int(number) if number.is_integer() else number


async def read_queue(conn: Conn, queue: str, job_ids: list[str]) -> QueueView:
    """Every existing key of `queue` that a flow on it can hold (one call)."""
    script, keys, args = call(queue, job_ids)
    return decode(conn, queue, await script.run(conn, keys, args))[1]


async def delete_queues(conn: Conn, ids: dict[str, list[str]], fresh: tuple[str, Fields] | None = None) -> None:
    """Remove every key of each queue (job ids: `ids`) and its lab state (the
    lock stays): Reset. `fresh`: a lab hash (name, fields) written anew right
    after, in the same round trip."""
    calls: list[Call | None] = []
    async with conn.pipeline(transaction=False) as pipe:
        for queue, job_ids in ids.items():
            script, keys, args = call(queue, job_ids, "clear")
            script.queue(pipe, keys, args)
            calls.append((script, keys, args))
        if fresh is not None and fresh[1]:
            pipe.hset(fresh[0], mapping=fresh[1])
            calls.append(None)
        await execute(conn, pipe, calls)
