"""A script that holds Valkey: how it shows (BUSY) and how it is stopped (SCRIPT KILL).

Past `busy-reply-threshold` Valkey answers other commands `BUSY …` (no redis-py
class of its own). SCRIPT KILL ends a script that has not written (`OK`); one
that has is `UNKILLABLE`; `NOTBUSY`: none runs. The console's and the graders'
watchdogs ask through `ask_script_kill`.
"""

from __future__ import annotations

import asyncio
from typing import Final

from redis.asyncio.cluster import ClusterNode
from redis.exceptions import RedisError, ResponseError

from server.emq.wire import Conn
from server.valkey.client import command_on

# The managed Valkey's `busy-reply-threshold`; the site's own scripts take a few ms.
BUSY_REPLY_MS: Final = 200


def is_busy(exc: BaseException | None) -> bool:
    """Valkey's BUSY reply, alone or as redis-py words it for a pipeline ("… caused error: BUSY …")."""
    text = str(exc) if isinstance(exc, ResponseError) else ""
    return text.startswith("BUSY ") or "caused error: BUSY " in text


async def ask_script_kill(conn: Conn, seconds: float, node: ClusterNode | None = None) -> str | None:
    """SCRIPT KILL's answer on `node` ('OK', 'UNKILLABLE', 'NOTBUSY'); None when none came in `seconds`."""
    try:
        await asyncio.wait_for(command_on(conn, node, "SCRIPT", "KILL"), max(seconds, 0.01))
    except ResponseError as exc:
        return str(exc).split(" ", 1)[0]
    except (TimeoutError, RedisError, OSError):
        return None
    return "OK"
