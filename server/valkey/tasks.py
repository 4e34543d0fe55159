"""Stopping the site's background tasks, which all wait on redis-py.

redis-py's asyncio client can swallow a cancellation that lands mid-connect
(redis-py issues 2028, 2551; here 4 of 60 stops of a reconnecting subscriber,
which then ran for ever). So a task is cancelled again until it has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

CANCEL_AGAIN = 0.1  # seconds a stopping task has to end before it is cancelled again


async def stop_tasks(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel `tasks` (None is skipped) and return once each has ended, whatever it raised.
    The caller's own cancellation still propagates through `asyncio.wait`."""
    pending = {task for task in tasks if task is not None}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN)
