"""The line for a grader, shared fairly by client address.

One address's runs (waiting or on a grader) hold at most ``per_address`` places (past it
``QueueFull``, 429), and the line is round-robin by address (start-time fair queueing): each
waiting run is tagged with its address's next turn, at least the turn served now, and the
smallest tag goes first, so a newcomer is next however many runs another address queued; one
address's runs keep their order. ``None`` (a bench, the site's own callers) has no share of
places and takes turns as one more address. In memory, per process: a courtesy, not a boundary.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from server.exercises.errors import QueueFull

T = TypeVar("T")


@dataclass(order=True)
class _Waiting(Generic[T]):
    tag: int
    seq: int
    address: str | None = field(compare=False)
    item: T = field(compare=False)


class FairLine(Generic[T]):
    """Waiting runs (``T``: the pool's tickets), served round-robin by address."""

    def __init__(self, bound: int, per_address: int) -> None:
        if per_address < 1:
            raise ValueError("an address needs at least one place in the line")
        self.bound = bound
        self.per_address = per_address
        self.held: Counter[str] = Counter()  # runs of each address waiting or on a grader
        self._waiting: list[_Waiting[T]] = []  # sorted by (tag, seq); a few dozen at most
        self._next_turn: dict[str | None, int] = {}
        self._now = 0  # the tag served last: a newcomer's turn is no earlier
        self._seq = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def __iter__(self) -> Iterator[T]:
        """The waiting runs in the order they will be served."""
        return (entry.item for entry in self._waiting)

    def __contains__(self, item: object) -> bool:
        return any(entry.item is item for entry in self._waiting)

    def admit(self, address: str | None) -> None:
        """Count one run of ``address`` in (waiting or served at once), or refuse it."""
        if address is None:
            return
        if self.held[address] >= self.per_address:
            raise QueueFull(f"Runs from your network already hold {self.per_address} places in the line for a "
                            "grader, its share; run the checks again in a few seconds.")
        self.held[address] += 1

    def release(self, address: str | None) -> None:
        """A run of ``address`` is over (graded, refused further on, or gone)."""
        if address is None:
            return
        self.held[address] -= 1
        if self.held[address] <= 0:
            del self.held[address]

    def full(self) -> bool:
        return len(self._waiting) >= self.bound

    def push(self, address: str | None, item: T) -> None:
        """Wait in line, behind the turns ``address`` already has."""
        tag = max(self._now, self._next_turn.get(address, 0))
        self._next_turn[address] = tag + 1
        self._seq += 1
        bisect.insort(self._waiting, _Waiting(tag, self._seq, address, item))

    def pop(self) -> T | None:
        """The run whose turn it is, out of the line (None when nobody waits)."""
        if not self._waiting:
            return None
        entry = self._waiting.pop(0)
        self._now = entry.tag
        # An address with nothing waiting keeps no tag: its next run starts at the current turn.
        waiting = {w.address for w in self._waiting}
        self._next_turn = {a: turn for a, turn in self._next_turn.items() if a in waiting}
        return entry.item

    def remove(self, item: T) -> bool:
        """Take ``item`` out of the line (it stopped waiting); whether it was there."""
        for at, entry in enumerate(self._waiting):
            if entry.item is item:
                del self._waiting[at]
                return True
        return False

    def clear(self) -> list[T]:
        """Every waiting run, out of the line (the pool is stopping)."""
        items = [entry.item for entry in self._waiting]
        self._waiting.clear()
        self._next_turn.clear()
        return items
