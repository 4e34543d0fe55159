"""A closed class's results, kept for the instructor to download: `lab:results:<CODE>` {name,
closed, csv, answers} expiring after `days`, and the index `lab:results`, code -> when they
expire (s). A code drawn again by a new class serves the open class's results; its close writes
over these.
"""

from __future__ import annotations

import time
from typing import Any

from server.emq.wire import Conn, as_dict, as_text
from server.sandboxes.keys import results_key

RESULTS_KEY = "lab:results"


async def keep_results(conn: Conn, code: str, name: str, csv: str, answers: str, days: int) -> None:
    now = time.time()
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hset(results_key(code), mapping={"name": name, "closed": str(now), "csv": csv, "answers": answers})
        pipe.expire(results_key(code), days * 86400)
        pipe.zadd(RESULTS_KEY, {code: now + days * 86400})
        pipe.zremrangebyscore(RESULTS_KEY, "-inf", now)
        await pipe.execute()


async def kept_results(conn: Conn, code: str) -> tuple[str, str] | None:
    """(results.csv, answers.json) as kept when the class closed; None when none are."""
    fields = as_dict(await conn.hgetall(results_key(code)))
    return (fields["csv"], fields.get("answers", "")) if "csv" in fields else None


async def results_listed(conn: Conn) -> list[tuple[str, float]]:
    """(code, when its results expire) for every closed class whose results are kept, newest first."""
    found: Any = await conn.zrevrangebyscore(RESULTS_KEY, "+inf", time.time(), withscores=True)
    return [(as_text(code), float(until)) for code, until in found]
