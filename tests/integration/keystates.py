"""Comparing what two sandboxes hold, for the widget tests of dive 03.

Two runs of one story in two sandboxes hold the same keys up to the sandbox
id and to the clock: `states` reads every key of a sandbox's widget queues
with the sandbox id taken out of names and values, and sorted set scores
dropped (a lease deadline, a death's timestamp). `dumps` is the opposite:
every key of a sandbox byte for byte (Valkey's DUMP), for proving that
nothing changed at all.

`reachable` answers "does this state come from clicking one at a time?": it
replays every distinct order of a set of clicks, each in a fresh sandbox,
and returns the states they leave.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests import widgets

State = dict[str, tuple[str, Any]]


async def states(conn: Any, sandbox: str) -> State:
    """Every `emq:` key of the sandbox, named and valued without its id (zset scores dropped)."""
    found: State = {}
    async for name in conn.scan_iter(match=f"emq:{{{sandbox}.*", count=500):
        kind = await conn.type(name)
        if kind == "hash":
            value: Any = await conn.hgetall(name)
        elif kind == "zset":
            value = sorted(await conn.zrange(name, 0, -1))
        elif kind == "list":
            value = await conn.lrange(name, 0, -1)
        elif kind == "set":
            value = sorted(await conn.smembers(name))
        else:
            value = await conn.get(name)
        found[name.replace(sandbox, "S")] = (kind, json.loads(json.dumps(value).replace(sandbox, "S")))
    return found


async def dumps(conn: Any, sandbox: str) -> dict[str, bytes | None]:
    """Every key whose name carries the sandbox id, as Valkey's DUMP bytes."""
    return {name: await conn.dump(name) async for name in conn.scan_iter(match=f"*{sandbox}*", count=500)}


async def replay(conn: Any, name: str, sandbox: str, clicks: list[tuple[str, dict[str, Any]]]) -> State:
    """`clicks` one at a time in `sandbox`, from the scenario as it lands."""
    await widgets.show(conn, name, sandbox)
    await widgets.act(conn, name, "reset", sandbox)
    for slug, body in clicks:
        await widgets.act(conn, name, slug, sandbox, **body)
    return await states(conn, sandbox)


async def reachable(conn: Any, name: str, clicks: list[tuple[str, dict[str, Any]]], start: int = 0) -> list[State]:
    """The states every distinct order of `clicks` leaves, one sandbox per order."""
    seen: set[str] = set()
    found: list[State] = []
    for n, order in enumerate(itertools.permutations(range(len(clicks)))):
        key = json.dumps([clicks[i] for i in order], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        found.append(await replay(conn, name, f"s{start + n:010d}", [clicks[i] for i in order]))
    return found
