"""Read the real keys of a widget's queues: name, type and value.

A snapshot is what every key panel draws. It is read from Valkey in two
pipelined round trips per call (the state sets with the TYPE of every known
candidate, then the values of those that exist; a third only when a state
set holds a job the widget did not name), never computed: the candidates are
the queue's own keys plus the rows and subkeys of every job id the widget
knows of or finds in a state set, so a job that appears in `pending` shows
up even if no widget named it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from server.valkey.connect import node_of
from server.emq import keyspace

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
STATE_SETS = ("pending", "active", "schedule", "dead")
ROW_SUFFIXES = ("", ":dependencies", ":processed", ":ignored", ":logs")


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [_text(v) for v in value]
    if isinstance(value, tuple):
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

    def get(self, suffix: str) -> KeyView | None:
        name = keyspace.queue_key(self.queue, suffix)
        return next((k for k in self.keys if k.name == name), None)

    def row(self, job_id: str, sub: str = "") -> KeyView | None:
        name = keyspace.job_key(self.queue, job_id) + sub
        return next((k for k in self.keys if k.name == name), None)

    def members(self, suffix: str) -> list[str]:
        key = self.get(suffix)
        return [m for m, _ in key.value] if key else []

    def sets_of(self, job_id: str) -> list[str]:
        """The state sets holding `job_id` (none, for a held parent)."""
        return [s for s in STATE_SETS if job_id in self.members(s)]

    def child(self, job_id: str, parent_id: str) -> dict[str, Any]:
        """A flow child as a picture draws it: its row's state and state set; once
        `complete` has retired the row, what the parent's hashes remember of it."""
        row = self.row(job_id)
        where = next(iter(self.sets_of(job_id)), None)
        if row is not None:
            return {"id": job_id, "state": row.value.get("state"), "set": where}
        processed, ignored = self.row(parent_id, ":processed"), self.row(parent_id, ":ignored")
        if processed is not None and job_id in processed.value:
            state: str | None = "completed"
        elif ignored is not None and job_id in ignored.value:
            state = "ignored"
        else:
            state = None
        return {"id": job_id, "state": state, "set": where}

    def as_json(self) -> dict[str, Any]:
        found = {"queue": self.queue, "slot": self.slot, "count": len(self.keys),
                 "keys": [k.as_json() for k in self.keys]}
        if self.node is not None:
            found["node"] = self.node
        return found


def _row_candidates(queue: str, ids: list[str]) -> list[str]:
    names: list[str] = []
    for job_id in ids:
        try:
            row = keyspace.job_key(queue, job_id)
        except keyspace.BadId:
            continue
        names.extend(row + s for s in ROW_SUFFIXES)
    return names


async def read_queue(conn: Any, queue: str, job_ids: list[str]) -> QueueView:
    """Every existing key of `queue` that a flow on it can hold."""
    known = list(dict.fromkeys(job_ids))
    candidates = [keyspace.queue_key(queue, s) for s in QUEUE_SUFFIXES] + _row_candidates(queue, known)
    # Round trip 1: the state sets, and the TYPE of every key known in advance.
    async with conn.pipeline(transaction=False) as pipe:
        for suffix in STATE_SETS:
            pipe.zrange(keyspace.queue_key(queue, suffix), 0, -1)
        for name in candidates:
            pipe.type(name)
        replies = await pipe.execute()
    members, types = replies[: len(STATE_SETS)], [_text(t) for t in replies[len(STATE_SETS):]]
    # Only when a state set holds a job the widget did not name: its TYPEs too.
    found = [i for i in dict.fromkeys(_text(m) for ms in members for m in ms) if i not in known]
    extra = _row_candidates(queue, found)
    if extra:
        async with conn.pipeline(transaction=False) as pipe:
            for name in extra:
                pipe.type(name)
            types += [_text(t) for t in await pipe.execute()]
        candidates += extra
    present = [(n, t) for n, t in zip(candidates, types) if t != "none"]
    async with conn.pipeline(transaction=False) as pipe:
        for name, kind in present:
            if kind == "hash":
                pipe.hgetall(name)
            elif kind == "zset":
                pipe.zrange(name, 0, -1, withscores=True)
            elif kind == "list":
                pipe.lrange(name, 0, -1)
            elif kind == "set":
                pipe.smembers(name)
            else:
                pipe.get(name)
        values = await pipe.execute() if present else []
    home = keyspace.queue_key(queue, "")
    view = QueueView(queue=queue, slot=keyspace.hash_slot(home), node=node_of(conn, home))
    for (name, kind), value in zip(present, values):
        if value is None or (kind != "string" and not value):
            # Gone between TYPE and the read (a reset or an expiry running
            # concurrently): Valkey holds no empty containers, so neither do we.
            continue
        value = _text(value)
        if kind == "zset":
            value = [[m, int(s) if float(s).is_integer() else s] for m, s in value]
        elif kind == "set":
            value = sorted(value)
        view.keys.append(KeyView(name=name, type=kind, value=value, queue=queue))
    return view


async def delete_queue(conn: Any, queue: str) -> int:
    """Remove every key of one queue (and its lab state): used by Reset."""
    removed = 0
    # On a cluster, only the primary holding the queue's slot has its keys.
    node = node_of(conn, keyspace.queue_key(queue, ""))
    where = {"target_nodes": conn.get_node(node_name=node)} if node else {}
    # One walk of the keyspace finds both prefixes (emq: rows, lab: state):
    # a SCAN costs the whole keyspace, whatever it matches.
    batch = [
        _text(name)
        async for name in conn.scan_iter(match=f"*:{{{queue}}}:*", count=1000, **where)
        if _text(name).startswith(("emq:", "lab:"))
    ]
    if batch:
        removed += int(await conn.delete(*batch))
    return removed
