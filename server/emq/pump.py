"""The outbox Pump: deliver cross-queue completions to their parents' slots.

A cross-queue child appends an entry to its own queue's ``flow:outbox``; the Pump reads a
page, delivers each entry on the parent's slot (``flow_deliver``) up to the first that does
not go, and trims exactly that prefix (a re-delivery is harmless: HSETNX guard). An entry a
job's writer could forge (undecodable, another child queue, refused by ``accept``) is poison
and blocks the outbox; the aged variant sets it aside.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import msgspec
from redis.client import NEVER_DECODE
from redis.exceptions import ResponseError

from server.emq import keyspace, registry
from server.emq.errors import EmqError
from server.emq.wire import Conn, as_int, as_text, raw

# Rounds of one aged call: a flood of poison cannot keep a tick busy for ever.
_MAX_ROUNDS: Final = 64


Accept = Callable[["OutboxEntry"], bool]


class PoisonEntry(ValueError):
    """An outbox entry that cannot be decoded into an ``OutboxEntry``."""


class OutboxEntry(msgspec.Struct, frozen=True):
    """One cross-queue signal, self-describing: enough to deliver it alone."""

    kind: Literal["completed", "failed"]
    child: str
    child_queue: str
    value: str  # the result for 'completed', the error for 'failed'
    parent: str
    parent_queue: str
    policy: str  # 'fp' or 'id'; read by flow_deliver for failures only


@dataclass(frozen=True)
class DeliveryReport:
    """What ``deliver_page`` did: the delivered prefix's length (duplicates included), the
    duplicates among them, and the raw entry it stopped at."""

    delivered: int
    duplicates: int
    blocked: str | None


def encode_entry(entry: OutboxEntry) -> str:
    """JSON, as the scripts write it (field order aside)."""
    return msgspec.json.encode(entry, order="sorted").decode()


def decode_entry(entry: str | bytes) -> OutboxEntry:
    """Parse and check one raw entry; raises ``PoisonEntry`` if it is not one."""
    try:
        # JSON read as Python reads it (as cjson does too: NaN, a name given twice whose last value
        # wins), then the seven fields typed in one call: missing, of another type or kind, refused
        data = json.loads(entry)
        found = msgspec.convert(data, OutboxEntry)
        keyspace.check_id(found.child)
        keyspace.check_id(found.parent)
        keyspace.check_queue(found.child_queue)
        keyspace.check_queue(found.parent_queue)
        for text in msgspec.structs.astuple(found):  # a lone surrogate (a \ud800 escape, or a byte not UTF-8)
            text.encode("utf-8")  # could not be sent to flow_deliver
    except (ValueError, TypeError) as exc:  # JSON, UTF-8, msgspec's and BadId are ValueErrors
        raise PoisonEntry(str(exc)) from exc
    except RecursionError as exc:  # nested past the decoder's depth
        raise PoisonEntry("nested too deep") from exc
    return found


def decoded(entry: str | bytes) -> OutboxEntry | None:
    """The entry, or None when it is poison: a reader that only looks skips it."""
    try:
        return decode_entry(entry)
    except PoisonEntry:
        return None


async def read_all(conn: Conn, queue: str, stop: int = -1) -> list[str]:
    """The entries of the queue's outbox through index ``stop`` (all by default), not removed."""
    # Undecoded, so a non-UTF-8 entry cannot make the client raise; kept losslessly (surrogateescape).
    items = await conn.execute_command("LRANGE", keyspace.outbox_key(queue), 0, stop, **{NEVER_DECODE: []})
    return [as_text(item) for item in items or []]


async def read_page(conn: Conn, queue: str, batch: int) -> list[str]:
    """The first ``batch`` entries of the queue's outbox, not removed."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    return await read_all(conn, queue, batch - 1)


async def deliver_one(conn: Conn, entry: OutboxEntry) -> int:
    """Apply one entry on its parent's slot: 1 applied, 2 duplicate, 0 blocked."""
    pq, parent = entry.parent_queue, entry.parent
    keys = [keyspace.dependencies_key(pq, parent), keyspace.processed_key(pq, parent), keyspace.job_key(pq, parent),
            keyspace.ignored_key(pq, parent), keyspace.queue_key(pq, "dead")]
    args = [entry.child, entry.value, parent, keyspace.base(pq), entry.kind, entry.policy]
    return as_int(await registry.run(conn, "flow_deliver", keys, args))


def trusted(raw_entry: str | OutboxEntry, queue: str, accept: Accept | None) -> OutboxEntry:
    """An entry of ``queue``'s outbox decoded (unless it is already) and checked: its child's
    queue is this one and ``accept`` (when given) takes it; else PoisonEntry."""
    entry = raw_entry if isinstance(raw_entry, OutboxEntry) else decode_entry(raw_entry)
    if entry.child_queue != queue:
        raise PoisonEntry(f"entry of queue {entry.child_queue!r} in the outbox of {queue!r}")
    if accept is not None and not accept(entry):
        raise PoisonEntry(f"entry for parent queue {entry.parent_queue!r} refused")
    return entry


async def deliver_page(conn: Conn, queue: str, entries: Sequence[str],
                       accept: Accept | None = None) -> DeliveryReport:
    """Deliver ``entries`` of ``queue``'s outbox in order, stopping at the first that does not go."""
    delivered = duplicates = 0
    for raw_entry in entries:
        try:
            outcome = await deliver_one(conn, trusted(raw_entry, queue, accept))
        except (PoisonEntry, EmqError, ResponseError):
            outcome = 0  # poison: undecodable, or refused by the server
        if outcome == 0:
            return DeliveryReport(delivered, duplicates, raw_entry)
        delivered += 1
        duplicates += outcome == 2
    return DeliveryReport(delivered, duplicates, None)


async def trim(conn: Conn, queue: str, entries_delivered: Sequence[str]) -> int:
    """Pop the delivered entries off the head while still there; how many (0: another Pump did)."""
    if not entries_delivered:
        return 0
    reply = await registry.run(conn, "outbox_trim", [keyspace.outbox_key(queue)], [raw(e) for e in entries_delivered])
    return as_int(reply)


async def deliver_flow_completions(conn: Conn, queue: str, batch: int, *, accept: Accept | None = None) -> int:
    """One Pump tick over ``queue``'s outbox; returns how many were delivered."""
    return await deliver_flow_completions_aged(conn, queue, batch, None, accept=accept)


async def deliver_flow_completions_aged(
    conn: Conn, queue: str, batch: int, max_blocked: int | None, *, accept: Accept | None = None
) -> int:
    """A tick that also ages a blocked head (None: it does not); past ``max_blocked`` ticks
    the head moves to the poison list and draining continues behind it in this call."""
    total = 0
    for _ in range(_MAX_ROUNDS):
        page = await read_page(conn, queue, batch)
        report = await deliver_page(conn, queue, page, accept)  # an empty page costs no round trip here
        await trim(conn, queue, page[: report.delivered])  # nor here
        total += report.delivered
        if report.blocked is None or max_blocked is None:
            break
        # One more tick against the blocked head: 0 moved on, 1 counted, 2 set aside.
        aged = await registry.run(
            conn, "outbox_age_head",
            [keyspace.outbox_key(queue), keyspace.outbox_head_key(queue), keyspace.poison_key(queue)],
            [raw(report.blocked), int(max_blocked)],
        )
        if as_int(aged) != 2:
            break
    return total
