"""A script that holds Valkey: how it shows (BUSY) and how it is stopped (SCRIPT KILL).

While a Lua script runs past `busy-reply-threshold`, Valkey answers every
other command `BUSY …` (redis-py gives that no class of its own) and serves
only a few, SCRIPT KILL among them. SCRIPT KILL ends a script that has not
written yet (`OK`); one that has is `UNKILLABLE`, and `NOTBUSY` means none
runs. The console's watchdog (server/console/watchdog.py) and the graders'
(server/exercises/watchdog.py) both ask through `ask_script_kill`.
"""

from __future__ import annotations

import asyncio
from typing import Final

from redis.asyncio.cluster import ClusterNode
from redis.exceptions import RedisError, ResponseError

from server.emq.wire import Conn
from server.valkey.client import command_on

# The managed Valkey's `busy-reply-threshold` (server/valkey/process.py): how
# long a script runs before others hear BUSY and SCRIPT KILL is heard at all.
# The site's own scripts take a few milliseconds.
BUSY_REPLY_MS: Final = 200


def is_busy(exc: BaseException | None) -> bool:
    """Valkey's BUSY reply: a script (or function) holds the server right now
    (alone, or as redis-py words it for a pipeline: "… caused error: BUSY …")."""
    text = str(exc) if isinstance(exc, ResponseError) else ""
    return text.startswith("BUSY ") or "caused error: BUSY " in text


async def ask_script_kill(conn: Conn, seconds: float, node: ClusterNode | None = None) -> str | None:
    """SCRIPT KILL's answer on `node` ('OK', 'UNKILLABLE', 'NOTBUSY'), None when
    none came within `seconds` (a server stuck in one long C call, or gone)."""
    try:
        await asyncio.wait_for(command_on(conn, node, "SCRIPT", "KILL"), max(seconds, 0.01))
    except ResponseError as exc:
        return str(exc).split(" ", 1)[0]
    except (TimeoutError, RedisError, OSError):
        return None
    return "OK"
