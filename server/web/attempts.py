"""Failed attempts (a token or a class code compared), counted in Valkey so every worker shares
them, in a sliding minute: at most `limit` attempts are compared in ANY 60 s, not per clock minute
(which let a guesser make twice the limit across a minute's end).

Each budget (a visitor, an address) is a sorted set of its attempts by time, `attempt.lua`; an
attempt past the limit is refused and not added, so a flood keeps the set at `limit` members.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from pathlib import Path

from server.emq.script import Script
from server.emq.wire import Conn

WINDOW_MS = 60_000
ATTEMPT = Script.from_file(Path(__file__).resolve().parent / "scripts" / "attempt.lua")
Counted = list[tuple[str, str]]  # (key, member): where an attempt was added, to give it back


def attempts_key(kind: str, whose: str) -> str:
    return f"lab:attempts:{kind}:{whose}"


async def take(conn: Conn, kind: str, budgets: Sequence[tuple[str, int]],
               now_ms: int | None = None) -> tuple[Counted, int | None]:
    """Count one attempt under each (whose, limit) in turn, one script each (atomic however many
    arrive at once; the budgets' keys are in different slots), stopping at the first past its limit
    (0: none), where the attempt is refused and so taken back from the budgets before it: nothing
    was compared. The attempts added (the caller gives them back on success), and the index of the
    budget past its limit, or None."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    member = f"{now}:{secrets.token_hex(6)}"
    counted: Counted = []
    for index, (whose, limit) in enumerate(budgets):
        key = attempts_key(kind, whose)
        if 0 < limit < int(await ATTEMPT.run(conn, [key], [now, WINDOW_MS, member, limit])):
            await give_back(conn, counted)
            return [], index
        counted.append((key, member))
    return counted, None


async def give_back(conn: Conn, counted: Counted) -> None:
    """The attempt was right: not a failed one."""
    async with conn.pipeline(transaction=False) as pipe:
        for key, member in counted:
            pipe.zrem(key, member)
        await pipe.execute()
