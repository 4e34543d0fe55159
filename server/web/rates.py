"""How often one visitor, one address or one class may ask, and failed sign-ins.

Actions and reads are counted in each worker's memory, so a flood is turned
away before it reaches Valkey (with N workers a client may get N budgets; they
are sized for that). Failed attempts are counted in Valkey, shared by every
worker, and BEFORE anything is compared.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from starlette.requests import Request

from server.emq.wire import Conn

WINDOW = 10  # seconds
REMEMBERED = 50_000  # counters one worker keeps (oldest dropped first)


class TooMany(Exception):
    """Over a budget: answered 429 with this sentence."""


class Windows:
    def __init__(self) -> None:
        self.counts: OrderedDict[tuple[str, int], int] = OrderedDict()

    def spend(self, name: str, cap: int, whose: str, what: str = "actions") -> None:
        """Count one; TooMany when `name` is past `cap` in this window (0: no limit)."""
        if cap <= 0:
            return
        key = (name, int(time.monotonic() // WINDOW))
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        self.counts.move_to_end(key)
        while len(self.counts) > REMEMBERED:
            self.counts.popitem(last=False)
        if count > cap:
            raise TooMany(f"too many {what}: at most {cap} every {WINDOW} seconds {whose}; wait a moment")


def client_address(request: Request) -> str:
    """The socket's peer, or the last `X-Forwarded-For` entry (the proxy's own) when one is trusted."""
    host = request.client.host if request.client else "unknown"
    if request.app.state.settings.trust_forwarded_for:
        last = request.headers.get("x-forwarded-for", "").rsplit(",", 1)[-1].strip()
        host = last or host
    return "".join(ch for ch in host if ch.isalnum() or ch in ".:-")[:64] or "unknown"


def attempts_key(address: str, kind: str) -> str:
    return f"lab:attempts:{kind}:{address}:{int(time.time() // 60)}"


async def take_attempt(conn: Conn, address: str, kind: str, limit: int) -> str | None:
    """Count one attempt with one INCR (atomic however many arrive at once): the key
    counted in (the caller gives it back on success), or None past the limit."""
    key = attempts_key(address, kind)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.incr(key)
        pipe.expire(key, 120)
        count, _ = await pipe.execute()
    return key if limit <= 0 or int(count) <= limit else None
