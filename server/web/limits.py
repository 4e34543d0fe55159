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
* A sandbox's size counts entries, not keys: a list, hash or sorted set
  weighs as many entries as it holds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

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


def queue_rates(pipe: Any, spent: list[Budget]) -> None:
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


# -- the size of a sandbox -------------------------------------------------------------


def entries_of(snapshot: dict[str, Any]) -> int:
    """How much a widget's keys hold: a string weighs 1, a collection its length."""
    total = 0
    for view in snapshot.get("queues", []):
        for key in view.get("keys", []):
            value = key.get("value")
            total += max(1, len(value)) if isinstance(value, (list, dict)) else 1
    return total


def judge_size(request: Request, raw: dict[Any, Any]) -> None:
    # Kept for record_size: an action that leaves the count as it was writes nothing.
    request.state.key_census = {str(k): str(v) for k, v in raw.items()}
    cap = request.app.state.settings.max_keys_per_sandbox
    held = sum(int(v) for k, v in raw.items() if str(k).startswith("keys:") and str(v).isdigit())
    if held > cap:
        raise Refused(409, f"this sandbox holds {held} keys and entries, more than its cap of {cap}: press Reset")


async def record_size(request: Request, sandbox: str, widget: str, snapshot: dict[str, Any]) -> None:
    """After an action: how many entries the widget's queues hold now."""
    count = entries_of(snapshot)
    census = getattr(request.state, "key_census", None)
    if census is not None and census.get(f"keys:{widget}") == str(count):
        return  # read this request, before the action: unchanged, so no write
    await request.app.state.conn.hset(f"lab:{{{sandbox}}}:meta", f"keys:{widget}", count)


__all__ = ["Budget", "budgets", "check_attempts", "client_address", "count_failed_attempt", "entries_of",
           "judge_rates", "judge_size", "queue_rates", "rate_key", "record_size"]
