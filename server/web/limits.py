"""The counting limits: who a request comes from, rates, failed attempts, key caps.

Every limit counts with INCR first and judges the count INCR returned, so
concurrent requests cannot all read "under the limit" and then all pass.

* The client address is the socket's peer, or the last `X-Forwarded-For`
  entry (the one the proxy added) when `EMQLAB_TRUST_FORWARDED_FOR` says a
  proxy stands in front: anyone can send that header.
* Actions count per visitor, per client address (all its visitors), and in a
  room's shared sandbox per room, each in a fixed 10-second window.
* Failed instructor sign-ins (form or `Authorization: Bearer`) and joins with
  an unknown room code count per address per minute; a right token is never
  refused by the count, so a guessing neighbour cannot lock the instructor out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from server.emq.wire import Pipe
from server.web.errors import Refused

RATE_WINDOW = 10  # seconds


def client_address(request: Request) -> str:
    """The client's address, cleaned to a short key-safe string."""
    host = request.client.host if request.client else "unknown"
    if request.app.state.settings.trust_forwarded_for:
        forwarded = request.headers.get("x-forwarded-for", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            host = last
    return "".join(ch for ch in host if ch.isalnum() or ch in ".:-")[:64] or "unknown"


# -- action rates ------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    name: str  # what the counter key is named after
    cap: int
    whose: str  # said in the refusal


def rate_key(name: str, now: float | None = None) -> str:
    return f"lab:{{{name}}}:rate:{int((time.time() if now is None else now) // RATE_WINDOW)}"


def budgets(request: Request, visitor: str, sandbox: str) -> list[Budget]:
    """The budgets one action spends: the visitor's, the address's, the room's."""
    settings = request.app.state.settings
    found = []
    if settings.rate_limit > 0:
        found.append(Budget(visitor, settings.rate_limit, "per visitor"))
    if settings.address_rate_limit > 0:
        found.append(Budget(f"ip:{client_address(request)}", settings.address_rate_limit, "from your address"))
    if sandbox != visitor and settings.room_rate_limit > 0:
        found.append(Budget(sandbox, settings.room_rate_limit, "in this room"))
    return found


def queue_rates(pipe: Pipe, spent: list[Budget]) -> None:
    now = time.time()
    for budget in spent:
        pipe.incr(rate_key(budget.name, now))
        pipe.expire(rate_key(budget.name, now), RATE_WINDOW * 2)


def judge_rates(spent: list[Budget], counts: list[Any]) -> None:
    for budget, count in zip(spent, counts):
        if int(count) > budget.cap:
            raise Refused(429, f"too many actions: at most {budget.cap} every {RATE_WINDOW} seconds {budget.whose}")


# -- failed attempts -----------------------------------------------------------------


def attempts_key(request: Request, kind: str) -> str:
    return f"lab:attempts:{kind}:{client_address(request)}:{int(time.time() // 60)}"


async def check_attempts(request: Request, kind: str) -> None:
    """Refuse before looking when this address is already past the limit."""
    limit = request.app.state.settings.attempt_limit
    if limit <= 0:
        return
    count = await request.app.state.conn.get(attempts_key(request, kind))
    if count is not None and int(count) >= limit:
        raise Refused(429, too_many_attempts(limit))


async def count_failed_attempt(request: Request, kind: str) -> None:
    """Count one failure (INCR first); Refused(429) when it is past the limit."""
    limit = request.app.state.settings.attempt_limit
    if limit <= 0:
        return
    key = attempts_key(request, kind)
    async with request.app.state.conn.pipeline(transaction=True) as pipe:
        pipe.incr(key)
        pipe.expire(key, 120)
        count, _ = await pipe.execute()
    if int(count) > limit:
        raise Refused(429, too_many_attempts(limit))


def too_many_attempts(limit: int) -> str:
    return f"too many failed attempts: at most {limit} a minute from one address; wait a minute and try again"


__all__ = ["Budget", "budgets", "check_attempts", "client_address", "count_failed_attempt",
           "judge_rates", "queue_rates", "rate_key"]
