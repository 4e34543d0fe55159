"""When a sandbox's notices make one batch: the rule the fan-out closes batches by.

A widget's action takes its lock first and deletes it last. While a lock
this batch saw taken is held, the batch stays open (at most
LOCK_WAIT_SECONDS from its first notice), so every page reads the widget
once per action, as soon as the action is over. A release seen without its
start (the lock was taken before the batch began) closes the batch at once.
Writes outside any action (a console command) are gathered for
COALESCE_SECONDS.

One `Gather` per sandbox with notices in flight, whatever the number of its
pages: the pages wait on nothing until the batch is closed and composed
(`server.live.fanout`), so a thousand open pages cost one timer per batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from server.live.fanout import Notice

COALESCE_SECONDS = 0.015  # writes outside any action, gathered into one batch
LOCK_WAIT_SECONDS = 0.25  # an action holding its lock longer is read mid-way


def lock_event(notice: Notice) -> str:
    """"set", "del", "expired", ... for a widget lock's notice; "" for any other notice."""
    return str(notice.data.get("event", "")) if notice.kind == "lock" else ""


class Gather:
    """One sandbox's notices from the first of a batch until the batch may close."""

    def __init__(self, number: int = 0) -> None:
        self.number = number  # the sandbox's batches count up from 1 (Fanout.gather)
        self.notices: list[Notice] = []
        self.started = time.monotonic()
        self.held: set[str] = set()  # queues whose lock this batch saw taken and not yet let go
        self.ended = False  # some action's lock was let go in this batch
        self.changed = asyncio.Event()  # a lock was taken or let go

    def add(self, notice: Notice) -> None:
        self.notices.append(notice)
        event = lock_event(notice)
        if not event:
            return
        queue = str(notice.data.get("queue"))
        if event == "set":
            self.held.add(queue)
        elif event in ("del", "expired"):
            self.held.discard(queue)
            self.ended = True
        self.changed.set()

    def deadline(self) -> float | None:
        """When the batch closes if nothing changes; None: it closes now."""
        if self.held:
            return self.started + LOCK_WAIT_SECONDS
        if self.ended:
            return None
        return self.started + COALESCE_SECONDS

    async def closed(self) -> list[Notice]:
        """Wait until the batch may close; its notices, in the order they came."""
        while (deadline := self.deadline()) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self.changed.wait()
        return self.notices


__all__ = ["COALESCE_SECONDS", "LOCK_WAIT_SECONDS", "Gather", "lock_event"]
