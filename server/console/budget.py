"""What a sandbox's console writes may cost, and the names they leave behind.

After a write, `scripts/weigh.lua` keeps the MEMORY USAGE of every key it may have changed, and
their sum, in the queue's `:spent` hash (a Reset deletes it). Before a write, the sandbox's sums
plus the bytes the line sends must stay under the budget, else 409 and nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from server.console.allow import Refusal
from server.console.plan import Plan
from server.emq.script import Script, execute
from server.emq.wire import Conn
from server.sandboxes import admission, keys

DEFAULT_BUDGET: Final = 1_048_576
OVERHEAD: Final = 64  # bytes counted for every write line, whatever it sends
INDEX_CAP: Final = 64  # extra key names one queue's index lists at most
# The keys of a queue a widget's snapshot finds by name: never in the index.
FOUND_BY_SNAPSHOT: Final = frozenset({
    "pending", "active", "schedule", "dead", "flow:outbox", "flow:outbox:poison", "flow:outbox:head",
    "metrics:completed",
})
# A row and the subkeys a script may write beside it (includes/queue_names.lua's row_suffixes).
ROW_SUFFIXES: Final = ("", ":dependencies", ":processed", ":ignored", ":logs")
WEIGH = Script.from_file(Path(__file__).resolve().parent / "scripts" / "weigh.lua")


def cost(found: Plan) -> int:
    """The least a write line can add: what it sends, which goes to Valkey's memory."""
    sent = [*found.keys, *found.argv] if found.how == "script" else found.args[1:]
    return OVERHEAD + sum(len(arg.encode("utf-8", "surrogateescape")) for arg in sent)


def extra_names(found: Plan, sandbox: str) -> list[str]:
    """The keys a write names that no snapshot finds (`clear.lua` removes each with its subkeys)."""
    base = f"emq:{{{sandbox}.{found.queue}}}:"
    return list(dict.fromkeys(k for k in found.written
                              if k.startswith(base) and k[len(base):] not in FOUND_BY_SNAPSHOT))


def _number(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):  # an error reply, an older site's key
        return 0


async def admit(admin: Conn, sandbox: str, queues: frozenset[str], found: Plan, budget: int,
                door: admission.Door | None = None) -> None:
    """Admission (`door`), the queues' sums and the queue's index, in one round trip; `Refusal` 409
    past either cap. The line's new names are then indexed before it runs, so a Reset finds them
    whatever happens next."""
    assert found.queue is not None
    names, index = extra_names(found, sandbox), keys.index_key(f"{sandbox}.{found.queue}")
    parts = sorted(queues | {found.queue})
    call = door.call(sandbox, used=True) if door is not None else None
    async with admin.pipeline(transaction=False) as pipe:
        if call is not None:
            call[0].queue(pipe, call[1], call[2])
        for part in parts:
            pipe.hget(keys.spent_key(f"{sandbox}.{part}"), "total")
        if names:
            pipe.scard(index)
            pipe.smismember(index, names)
        replies = await execute(admin, pipe, [call])
    if call is not None:
        admission.refuse(replies.pop(0))
    if sum(_number(r) for r in replies[:len(parts)]) + cost(found) > budget:
        held = f"{budget / 1_048_576:g} MB" if budget >= 1_048_576 else f"{budget // 1024} KB"
        raise Refusal(409, f"This sandbox holds about {held} already: "
                           "press Reset on a widget to free its queue's share, then run the line again. "
                           "Nothing was written.")
    if not names:
        return
    size, present = _number(replies[len(parts)]), replies[len(parts) + 1]
    if isinstance(present, Exception):
        raise present
    new = [n for n, there in zip(names, present) if not int(there)]
    if new and size + len(new) > INDEX_CAP:
        raise Refusal(409, f"the console adds at most {INDEX_CAP} new keys to one queue; press Reset on its "
                           "widget. Nothing was written.")
    if new:
        await admin.sadd(index, *new)


async def weigh(admin: Conn, sandbox: str, found: Plan) -> int:
    """Charge the queue what Valkey now reports for the keys the write may have changed: the
    queue's own keys, each named key, and a named row's whole family (a script writes its counter
    or results too). Returns the queue's new sum."""
    base = f"emq:{{{sandbox}.{found.queue}}}:"
    names = [base + suffix for suffix in sorted(FOUND_BY_SNAPSHOT)]
    for key in (k for k in found.written if k.startswith(base)):
        names.append(key)
        if key[len(base):].startswith("job:"):
            row = base + "job:" + key[len(base) + len("job:"):].split(":", 1)[0]
            names.extend(row + suffix for suffix in ROW_SUFFIXES)
    return int(await WEIGH.run(admin, [keys.spent_key(f"{sandbox}.{found.queue}"), *dict.fromkeys(names)], []))


async def spent(admin: Conn, sandbox: str, queues: frozenset[str]) -> int:
    """The sandbox's total, as `admit` counts it."""
    parts = sorted(queues)
    async with admin.pipeline(transaction=False) as pipe:
        for part in parts:
            pipe.hget(keys.spent_key(f"{sandbox}.{part}"), "total")
        return sum(_number(r) for r in await pipe.execute(raise_on_error=False))
