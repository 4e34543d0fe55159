"""When a sandbox's keyspace notifications make one change a page should see.

An action holds its widget's lock (`lab:{q}:lock`) around its writes, so a batch with a
lock held closes at its deletion (at most HELD_MAX), one without after QUIET. A closed
batch is one `Change`, handed to `flush` one at a time per sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from server.valkey.tasks import stop_tasks

log = logging.getLogger("emqlab.stream")

QUIET = 0.010  # seconds a batch without a held lock stays open for more notices
HELD_MAX = 0.250  # seconds a held lock may keep a batch open


@dataclass(frozen=True)
class Effect:
    """One write a keyspace notification reported."""

    widget: str
    queue: str
    key: str
    event: str
    at: float


@dataclass
class Change:
    """A sandbox's closed batch: the widgets it touched and their learner-key effects."""

    widgets: set[str] = field(default_factory=set)
    effects: list[Effect] = field(default_factory=list)


Flush = Callable[[str, Change], Awaitable[None]]


@dataclass
class _Open:
    change: Change = field(default_factory=Change)
    locked: set[str] = field(default_factory=set)  # widgets whose lock is held now
    timer: asyncio.TimerHandle | None = None


class Batches:
    def __init__(self, flush: Flush) -> None:
        self.flush = flush
        self.open: dict[str, _Open] = {}
        self.running: dict[str, asyncio.Task[None]] = {}

    def notice(self, sandbox: str, widget: str, queue: str, key: str, event: str) -> None:
        """One notification of a key of `widget` in `sandbox`."""
        batch = self.open.setdefault(sandbox, _Open())
        if key.endswith(":lock") and key.startswith("lab:"):
            if event == "set":
                batch.locked.add(widget)
                self._arm(sandbox, batch, HELD_MAX)
                return
            batch.locked.discard(widget)  # del, expired: the action is over
            if not batch.locked and batch.change.widgets:
                self._close(sandbox)
            return
        batch.change.widgets.add(widget)
        if key.startswith("emq:"):
            batch.change.effects.append(Effect(widget, queue, key, event, time.time()))
        self._arm(sandbox, batch, HELD_MAX if batch.locked else QUIET)

    def _arm(self, sandbox: str, batch: _Open, delay: float) -> None:
        if batch.timer is None:
            batch.timer = asyncio.get_running_loop().call_later(delay, self._close, sandbox)

    def _close(self, sandbox: str) -> None:
        batch = self.open.pop(sandbox, None)
        if batch is None:
            return
        if batch.timer is not None:
            batch.timer.cancel()
        if not batch.change.widgets:
            return
        before = self.running.get(sandbox)
        self.running[sandbox] = asyncio.create_task(self._run(sandbox, batch.change, before))

    async def _run(self, sandbox: str, change: Change, before: asyncio.Task[None] | None) -> None:
        if before is not None:  # one flush at a time per sandbox, in order
            with contextlib.suppress(BaseException):
                await before
        try:
            await self.flush(sandbox, change)
        except Exception:
            log.exception("delivering a change of %s failed", sandbox)
        finally:
            if self.running.get(sandbox) is asyncio.current_task():
                self.running.pop(sandbox, None)

    async def stop(self) -> None:
        for batch in self.open.values():  # what was gathering is dropped
            if batch.timer is not None:
                batch.timer.cancel()
        self.open.clear()
        await stop_tasks(self.running.values())
