"""Stopping the site's background tasks, which all wait on redis-py.

redis-py's asyncio client has been seen to swallow a cancellation that lands
at the wrong moment in a connect (redis-py issues 2028 and 2551 tell of the
same family): here in 4 of 60 stops of a hub subscriber that was reconnecting
to a restarted Valkey. The task went on to subscribe and read for
ever, and Ctrl-C never stopped the site. So a task is cancelled again until
it has ended, as anyio's cancel scopes do, never once and waited for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

CANCEL_AGAIN = 0.1  # seconds a stopping task has to end before it is cancelled again


async def stop_tasks(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel `tasks` (None is skipped) and return once each has ended, whatever it raised.

    The caller's own cancellation goes on through `asyncio.wait`: it is never
    swallowed with the tasks' (a caller cancelled while its reader and heartbeat
    end must end too).
    """
    pending = {task for task in tasks if task is not None}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN)
