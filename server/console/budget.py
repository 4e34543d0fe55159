"""What a sandbox's console writes may cost, and the names they leave behind.

Valkey's memory cannot be weighed beforehand, so a write line is charged what it
sends (plus `OVERHEAD`) before it runs, to its queue's `:spent` (a widget's Reset
frees it); names a snapshot would not find go to the queue's `:index`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from server.console.allow import Refusal
from server.console.plan import Plan
from server.emq.wire import Conn
from server.sandboxes import keys

DEFAULT_BUDGET: Final = 1_048_576
OVERHEAD: Final = 64  # bytes counted for every write line, whatever it sends
INDEX_CAP: Final = 64  # extra key names one queue's index lists at most
# The keys of a queue a widget's snapshot finds by name: never in the index.
FOUND_BY_SNAPSHOT: Final = frozenset({
    "pending", "active", "schedule", "dead", "flow:outbox", "flow:outbox:poison", "flow:outbox:head",
    "metrics:completed",
})


def cost(found: Plan) -> int:
    """The bytes a write line is counted for."""
    return OVERHEAD + sum(len(arg.encode("utf-8", "surrogateescape")) for arg in found.sent)


def extra_names(found: Plan, sandbox: str) -> list[str]:
    """The keys a write names that no snapshot finds (`clear.lua` removes each with its subkeys)."""
    if found.queue is None:
        return []
    base = f"emq:{{{sandbox}.{found.queue}}}:"
    names = (k for k in found.written if k.startswith(base) and k[len(base):] not in FOUND_BY_SNAPSHOT)
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class Admission:
    """What one write may do: its cost, and the index names it adds."""

    queue: str
    cost: int
    new_names: list[str]


def _number(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0  # not a counter (nothing but the site writes it): counted as empty


async def admit(admin: Conn, sandbox: str, queues: frozenset[str], found: Plan, budget: int) -> Admission:
    """Read the sandbox's spent bytes and the queue's index (one pipeline);
    `Refusal` 409 when the line would go past either cap."""
    assert found.queue is not None
    names = extra_names(found, sandbox)
    parts = sorted(queues | {found.queue})
    async with admin.pipeline(transaction=False) as pipe:
        for part in parts:
            pipe.get(keys.spent_key(f"{sandbox}.{part}"))
        if names:
            pipe.scard(keys.index_key(f"{sandbox}.{found.queue}"))
            pipe.smismember(keys.index_key(f"{sandbox}.{found.queue}"), names)
        replies = await pipe.execute()
    spent = sum(_number(r) for r in replies[:len(parts)])
    price = cost(found)
    if spent + price > budget:
        raise Refusal(409, f"This sandbox holds about {_megabytes(budget)} already: press Reset on a widget "
                           "to free its queue's share, then run the line again. Nothing was written.")
    new: list[str] = []
    if names:
        size, present = _number(replies[len(parts)]), replies[len(parts) + 1]
        new = [n for n, there in zip(names, present) if not int(there)]
        if new and size + len(new) > INDEX_CAP:
            raise Refusal(409, f"the console adds at most {INDEX_CAP} new keys to one queue; press Reset on its "
                               "widget. Nothing was written.")
    return Admission(found.queue, price, new)


async def charge(admin: Conn, sandbox: str, admitted: Admission) -> None:
    """Count the line and list its new names (one pipeline, the queue's own slot)."""
    async with admin.pipeline(transaction=False) as pipe:
        pipe.incrby(keys.spent_key(f"{sandbox}.{admitted.queue}"), admitted.cost)
        if admitted.new_names:
            pipe.sadd(keys.index_key(f"{sandbox}.{admitted.queue}"), *admitted.new_names)
        await pipe.execute()


async def spent(admin: Conn, sandbox: str, queues: frozenset[str]) -> int:
    """The sandbox's total, as `admit` counts it."""
    parts = sorted(queues)
    async with admin.pipeline(transaction=False) as pipe:
        for part in parts:
            pipe.get(keys.spent_key(f"{sandbox}.{part}"))
        return sum(_number(r) for r in await pipe.execute())


def _megabytes(size: int) -> str:
    return f"{size / 1_048_576:g} MB" if size >= 1_048_576 else f"{size // 1024} KB"
