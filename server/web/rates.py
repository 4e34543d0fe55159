"""How often one visitor, one address or one class may ask, how many streams a visitor holds, failed sign-ins.

Actions, reads and streams are counted in each worker's memory, so a flood is turned away before it
reaches Valkey (with N workers a client may get N budgets; they are sized for that), and a worker killed
mid-stream leaves no count behind. Failed attempts are counted in Valkey, shared by every worker, BEFORE
anything is compared: per visitor, then per address, so one guesser cannot use up a classroom's allowance.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from starlette.requests import Request

from server.emq.wire import Conn
from server.refusal import Refusal
from server.web.services import services

WINDOW = 10  # seconds
REMEMBERED = 50_000  # counters one worker keeps (oldest dropped first)


class TooMany(Refusal):
    """Over a budget: answered 429 with this sentence, retried in 10 s."""

    status, retry_after = 429, 10


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


class StreamSlots:
    """Streams one visitor may have open: a thousand on one cookie took a site from 63 to 175 MB."""

    def __init__(self) -> None:
        self.open: dict[str, int] = {}

    def take(self, visitor: str, cap: int) -> Callable[[], None]:
        """A place for one more stream of `visitor` (TooMany past `cap`; 0: no cap), and how to give it
        back: safe to call more than once, as every way a stream ends calls it."""
        if 0 < cap <= self.open.get(visitor, 0):
            raise TooMany(f"too many open streams: at most {cap} pages of this site may be open at once "
                          "for one visitor; close some tabs and reload this one")
        self.open[visitor] = self.open.get(visitor, 0) + 1
        held = [True]

        def release() -> None:
            if held:
                held.clear()
                self.open[visitor] -= 1
                if not self.open[visitor]:
                    del self.open[visitor]

        return release


def client_address(request: Request) -> str:
    """The socket's peer, or the last `X-Forwarded-For` entry (the proxy's own) when one is trusted."""
    host = request.client.host if request.client else "unknown"
    if services(request).settings.trust_forwarded_for:
        last = request.headers.get("x-forwarded-for", "").rsplit(",", 1)[-1].strip()
        host = last or host
    return "".join(ch for ch in host if ch.isalnum() or ch in ".:-")[:64] or "unknown"


def attempts_key(kind: str, whose: str) -> str:
    return f"lab:attempts:{kind}:{whose}:{int(time.time() // 60)}"


async def take_attempt(conn: Conn, kind: str, budgets: Sequence[tuple[str, int]]) -> tuple[list[str], int | None]:
    """Count one attempt under each (whose, limit) in turn, one INCR each (atomic however many
    arrive at once), stopping at the first past its limit (0: none). The keys counted in (the
    caller gives them back on success), and the index of the budget past its limit, or None."""
    counted: list[str] = []
    for index, (whose, limit) in enumerate(budgets):
        key = attempts_key(kind, whose)
        async with conn.pipeline(transaction=False) as pipe:
            pipe.incr(key)
            pipe.expire(key, 120)
            count, _ = await pipe.execute()
        counted.append(key)
        if 0 < limit < int(count):
            return counted, index
    return counted, None


async def give_back(conn: Conn, counted: Sequence[str]) -> None:
    """The attempt was right: not a failed one."""
    async with conn.pipeline(transaction=False) as pipe:
        for key in counted:
            pipe.decr(key)
        await pipe.execute()
