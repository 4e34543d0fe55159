"""The grader line's fairness: each sandbox's share of runs, and the line taken in turns by address.

The shares are in memory, per process: a courtesy to the others in one site, not a security
boundary (the ACL user and the watchdog are). A sandbox has at most ``sandbox_in_flight`` runs
waiting or running, paced by a token bucket (``sandbox_burst`` at once, refilled at
``sandbox_per_minute``). An address's runs (waiting or on a grader) hold at most ``address_runs``
places, and the line is round-robin by address (start-time fair queueing): each waiting run is
tagged with its address's next turn, at least the turn served now, and the smallest tag goes first,
so a newcomer is next however many runs another address queued; one address's runs keep their
order. ``None`` (a bench, the site's own callers) has no share of places and takes turns as one
more address.
"""

from __future__ import annotations

import bisect
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from server.exercises.errors import QueueFull, TooOften

T = TypeVar("T")
FORGET_AFTER: Final = 4096  # sandboxes remembered before idle, refilled ones are dropped


@dataclass
class _Share:
    tokens: float
    stamp: float
    in_flight: int = 0


class SandboxShares:
    """Admits a sandbox's run or refuses it in words (``TooOften``, 429) before it takes a place."""

    def __init__(self, in_flight: int, burst: int, per_minute: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.in_flight = in_flight
        self.burst = burst
        self.per_second = per_minute / 60.0
        self.clock = clock
        self.shares: dict[str, _Share] = {}

    def _refilled(self, share: _Share, now: float) -> float:
        return min(float(self.burst), share.tokens + (now - share.stamp) * self.per_second)

    def admit(self, sandbox: str) -> None:
        """Count one run of ``sandbox`` in, or raise ``TooOften``."""
        now = self.clock()
        share = self.shares.get(sandbox)
        if share is None:
            if len(self.shares) >= FORGET_AFTER:
                for name, old in list(self.shares.items()):
                    if old.in_flight == 0 and self._refilled(old, now) >= self.burst:
                        del self.shares[name]
            share = self.shares[sandbox] = _Share(tokens=float(self.burst), stamp=now)
        share.tokens, share.stamp = self._refilled(share, now), now
        if share.in_flight >= self.in_flight:
            runs = "run" if self.in_flight == 1 else "runs"
            raise TooOften(f"This sandbox already has {share.in_flight} {runs} of the checks waiting or "
                           "running; wait for their results, then run again.")
        if share.tokens < 1.0:
            wait = math.ceil((1.0 - share.tokens) / self.per_second)
            raise TooOften(f"This sandbox ran the checks {self.burst} times in a short while; "
                           f"try again in {wait} s.")
        share.tokens -= 1.0
        share.in_flight += 1

    def done(self, sandbox: str, *, refund: bool = False) -> None:
        """A run of ``sandbox`` is over; ``refund``: it was refused further on (the line was full)."""
        share = self.shares.get(sandbox)
        if share is not None:
            share.in_flight = max(0, share.in_flight - 1)
            if refund:
                share.tokens = min(float(self.burst), share.tokens + 1.0)


@dataclass(order=True)
class _Waiting(Generic[T]):
    tag: int
    seq: int
    address: str | None = field(compare=False)
    item: T = field(compare=False)


class FairLine(Generic[T]):
    """Waiting runs (``T``: the pool's tickets), served round-robin by address."""

    def __init__(self, bound: int, per_address: int) -> None:
        self.bound, self.per_address = bound, per_address
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
        """Count one run of ``address`` in (waiting or served at once), or refuse it (``QueueFull``, 429)."""
        if address is None:
            return
        if self.held[address] >= self.per_address:
            raise QueueFull(f"Runs from your network already hold {self.per_address} places in the line for a "
                            "grader, its share; run the checks again in a few seconds.")
        self.held[address] += 1

    def release(self, address: str | None) -> None:
        """A run of ``address`` is over (graded, refused further on, or gone)."""
        if address is not None:
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
