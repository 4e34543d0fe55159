"""An action's own snapshot, shown by the stream of the change it made.

An action reads its widget's keys in the round trip that lets go of its
lock: `queue_keys.lua` finish reads them and deletes the lock in one script.
The sandbox's pages would read the same keys again when the batch that
deletion closes is composed (`server.live.fanout`). Instead, an action of
this process offers its snapshot to that batch, and the batch shows it when
this rule proves it as fresh as a read of its own:

- Before it takes its lock, the action marks the batch its writes will join
  (`Fanout.batch_mark`: the one open, or the sandbox's next). Its notices
  land in that batch or a later one, never an earlier one, so its lock's
  deletion comes at or after every notice of the marked batch.
- That holds only while the hub hears every notice of the sandbox: the
  action marks only once Valkey confirmed the sandbox's subscription
  (`Hub.follows`), and a mark made before any break in what the hub hears
  (a subscription lost or made anew, notifications judged off or restored:
  `Fanout.epoch`) is taken by no batch. Batch numbers are never reused.
- The marked batch's notices of the widget hold exactly one lock SET and one
  lock DEL, and the DEL is the last of them. That DEL is this action's, or
  one that came before this action took the lock; either way no notice of
  the widget in the batch came after the keys the action read.

A batch the rule does not prove (two actions in it, a write after the lock
was let go, a lapsed lease, an action still running) reads the keys itself,
as before. Only a widget of one queue offers: its keys are one hash slot,
whose notices come in the order Valkey made the writes, even on a cluster.

The action waits, at most HAND_ON_SECONDS, for the batch to reach the
sandbox's pages before it answers. The page that clicked then has the
stream's frames (its effects) before the answer, holds them until the
answer comes, and paints both at once (site/static/widgets/lab.js, `hold`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from server.live.gather import lock_event

if TYPE_CHECKING:
    from server.live.fanout import Batch, Fanout, Notice

HAND_ON_SECONDS = 0.02  # how long an answer waits for its batch to reach the pages
OFFER_WAIT_SECONDS = 0.025  # how long a closed batch waits for a marked action's snapshot


class Answer:
    """One action of this process on one widget of a sandbox a page follows."""

    def __init__(self, fanout: Fanout | None, sandbox: str, widget: str, mark: int, epoch: int = 0) -> None:
        self.fanout = fanout
        self.sandbox = sandbox
        self.widget = widget
        self.mark = mark  # the batch's number; 0: the sandbox's next batch, numbered when it opens
        self.epoch = epoch  # what the hub heard unbroken since (`Fanout.epoch`)
        self.snapshot: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()

    def offer(self, snapshot: dict[str, Any]) -> None:
        """The snapshot the action's closing round trip read."""
        if not self.snapshot.done():
            self.snapshot.set_result(snapshot)

    def withdraw(self) -> None:
        """The action ended without a snapshot (refused, failed): the batch reads its own."""
        if not self.snapshot.done():
            self.snapshot.set_result(None)

    async def handed_on(self) -> bool:
        """Wait (at most HAND_ON_SECONDS) until the marked batch, or a later
        one, reached the sandbox's pages; False if it did not."""
        if self.fanout is None:
            return False
        try:
            async with asyncio.timeout(HAND_ON_SECONDS):
                return await self.fanout.handed_on(self)
        except TimeoutError:
            return False


@contextlib.asynccontextmanager
async def answering(fanout: Fanout, sandbox: str, widget: str, offers: bool) -> AsyncIterator[Answer]:
    """An action's Answer; one that offers nothing unless `offers` (a widget
    of one queue, on a sandbox whose every notice the hub hears: the caller
    asks `Widget.offers_answer` first, then `Hub.follows`) and a page of the
    sandbox is open here."""
    mark = fanout.batch_mark(sandbox) if offers else None
    if mark is None:
        yield Answer(None, sandbox, widget, 0)
        return
    answer = Answer(fanout, sandbox, widget, mark, fanout.epoch)
    waiting = fanout.answers.setdefault(sandbox, [])
    waiting.append(answer)
    try:
        yield answer
    finally:
        answer.withdraw()
        waiting.remove(answer)
        if not waiting and fanout.answers.get(sandbox) is waiting:
            del fanout.answers[sandbox]


def proven(notices: list[Notice]) -> bool:
    """A widget's notices in one batch: one lock SET and one DEL, the DEL last."""
    events = [lock_event(n) for n in notices]
    locks = [e for e in events if e in ("set", "del", "expired")]
    return locks == ["set", "del"] and events[-1] == "del"


async def offered(fanout: Fanout, batch: Batch, widget: str, notices: list[Notice]) -> dict[str, Any] | None:
    """The snapshot an action of this process offers for `widget`'s `notices`
    in `batch`, when the rule proves it; None: the batch reads its own.
    Worked out once per batch and widget, whatever the number of page groups."""
    if widget not in batch.offers:
        batch.offers[widget] = await _offered(fanout, batch, widget, notices)
    return batch.offers[widget]


async def _offered(fanout: Fanout, batch: Batch, widget: str, notices: list[Notice]) -> dict[str, Any] | None:
    marked = [a for a in fanout.answers.get(batch.sandbox, ())
              if a.widget == widget and a.mark == batch.number and a.epoch == fanout.epoch]
    if not marked or not notices or not proven(notices):
        return None
    # the first snapshot offered, whichever action offers it first
    pending = {asyncio.ensure_future(asyncio.shield(a.snapshot)) for a in marked}
    try:
        async with asyncio.timeout(OFFER_WAIT_SECONDS):
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for finished in done:
                    snapshot: dict[str, Any] | None = finished.result()
                    if snapshot is not None and fanout.epoch == marked[0].epoch:
                        return snapshot
    except TimeoutError:
        pass
    finally:
        for left in pending:
            left.cancel()
    return None


__all__ = ["HAND_ON_SECONDS", "OFFER_WAIT_SECONDS", "Answer", "answering", "offered", "proven"]
