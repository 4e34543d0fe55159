"""How often one visitor, one address or one class may ask, and failed sign-ins.

Actions and state reads are counted by each worker in its own memory, in
fixed 10-second windows: a refusal costs no round trip, so a flood of reads
is turned away before it reaches Valkey and another learner's click does not
wait behind it. With N workers a client may get up to N times a budget
(requests are spread over the workers); the budgets are sized for that.

* actions: per visitor, per address (all its visitors), per class (the
  class's shared sandbox); a class member is counted by the class, not the
  address, so a classroom behind one NAT address is not one visitor;
* state reads and pages: per visitor, a budget of their own;
* failed attempts (instructor token, room codes) are kept in Valkey, shared
  by every worker, per address per minute, and consulted BEFORE the token is
  compared: past the limit the token is not looked at at all.
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
    """Counters in fixed windows, in this process."""

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
    """The client's address: the socket's peer, or the last `X-Forwarded-For`
    entry (the one the proxy added) when a proxy is trusted to add it."""
    host = request.client.host if request.client else "unknown"
    if request.app.state.settings.trust_forwarded_for:
        last = request.headers.get("x-forwarded-for", "").rsplit(",", 1)[-1].strip()
        host = last or host
    return "".join(ch for ch in host if ch.isalnum() or ch in ".:-")[:64] or "unknown"


# -- failed attempts (in Valkey: every worker sees them) ------------------------------


def attempts_key(address: str, kind: str) -> str:
    return f"lab:attempts:{kind}:{address}:{int(time.time() // 60)}"


async def over_attempts(conn: Conn, address: str, kind: str, limit: int) -> bool:
    """Whether this address is past its failed attempts this minute (read before any compare)."""
    if limit <= 0:
        return False
    count = await conn.get(attempts_key(address, kind))
    return count is not None and int(count) >= limit


async def count_failure(conn: Conn, address: str, kind: str) -> None:
    key = attempts_key(address, kind)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.incr(key)
        pipe.expire(key, 120)
        await pipe.execute()


async def take_attempt(conn: Conn, address: str, kind: str, limit: int) -> str | None:
    """Count one attempt BEFORE anything is compared, with one INCR (atomic
    however many arrive at once): the key it was counted in, or None when it
    is past the limit (then nothing may be compared)."""
    key = attempts_key(address, kind)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.incr(key)
        pipe.expire(key, 120)
        count, _ = await pipe.execute()
    return key if limit <= 0 or int(count) <= limit else None


def too_many_attempts(limit: int) -> str:
    return f"too many failed attempts: at most {limit} a minute from one address; wait a minute and try again"
