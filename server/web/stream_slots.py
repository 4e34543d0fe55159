"""Streams one visitor may hold open at once, counted by each worker.

Every open stream holds buffers and a subscription: a thousand on one cookie
took a site from 63 to 175 MB. A visitor's few tabs stay far below the cap;
past it a new stream answers 429 in words and the open ones go on. Counted in
the worker's memory, like the rates: a count in Valkey would outlive a worker
killed mid-stream and lock its visitors out.
"""

from __future__ import annotations

from server.web.rates import TooMany


class Slot:
    """One stream's place; `release` is safe to call more than once (every way a stream ends calls it)."""

    def __init__(self, owner: StreamSlots, visitor: str) -> None:
        self.owner, self.visitor, self.held = owner, visitor, True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.owner.give_back(self.visitor)


class StreamSlots:
    def __init__(self) -> None:
        self.open: dict[str, int] = {}

    def take(self, visitor: str, cap: int) -> Slot:
        """A place for one more stream of `visitor`; TooMany past `cap` (0: no cap)."""
        count = self.open.get(visitor, 0)
        if 0 < cap <= count:
            raise TooMany(f"too many open streams: at most {cap} pages of this site may be open at once "
                          "for one visitor; close some tabs and reload this one")
        self.open[visitor] = count + 1
        return Slot(self, visitor)

    def give_back(self, visitor: str) -> None:
        left = self.open.get(visitor, 0) - 1
        if left > 0:
            self.open[visitor] = left
        else:
            self.open.pop(visitor, None)
