"""Stopping a background task (server/valkey/client.py): cancelled until it has
ended, and the stopper's own cancellation never swallowed on the way."""

from __future__ import annotations

import asyncio
import contextlib

from server.valkey.client import stop_tasks


def test_a_task_cancelled_while_it_stops_its_own_tasks_stays_cancelled() -> None:
    """The site stopping as a subscriber drops: the subscriber waits for its
    reader and heartbeat to end, and is cancelled meanwhile. It must end, not
    swallow that cancellation with theirs and reconnect for ever."""

    async def slow_to_end() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)  # a connection's close, say

    async def owner(started: asyncio.Event) -> str:
        inner = asyncio.create_task(slow_to_end())
        await asyncio.sleep(0)
        started.set()
        await stop_tasks([inner])
        return "went on"

    async def scenario() -> None:
        started = asyncio.Event()
        task = asyncio.create_task(owner(started))
        await started.wait()
        await asyncio.sleep(0.01)  # the owner is inside stop_tasks, its inner task still ending
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert task.cancelled()

    asyncio.run(scenario())


def test_a_task_that_swallows_a_cancellation_is_cancelled_again_until_it_ends() -> None:
    """As redis-py did in 4 of 60 stops of a subscriber reconnecting to a
    restarted Valkey: the first cancellation is eaten, and the task would read
    for ever."""

    async def stubborn() -> None:
        with contextlib.suppress(asyncio.CancelledError):  # swallowed
            await asyncio.sleep(60)
        await asyncio.sleep(60)  # goes on as if nothing happened

    async def scenario() -> None:
        task = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        await asyncio.wait_for(stop_tasks([task]), timeout=5)
        assert task.done()

    asyncio.run(scenario())
