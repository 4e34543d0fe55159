"""Each sandbox's share of the graders, refused with ``TooOften`` (429) before a run takes a place.

At most ``in_flight`` runs of one sandbox wait or run at once, and a token bucket (``burst`` at
once, refilled at ``per_minute``) paces it. The state is per process, in memory: a courtesy to
the others in one site, not a security boundary (the ACL user and the watchdog are).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from server.exercises.errors import TooOften

FORGET_AFTER: Final = 4096  # sandboxes remembered before idle, refilled ones are dropped


@dataclass
class _Share:
    tokens: float
    stamp: float
    in_flight: int = 0


class SandboxShares:
    """Admits a sandbox's run or refuses it in words."""

    def __init__(self, in_flight: int, burst: int, per_minute: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if in_flight < 1 or burst < 1 or per_minute <= 0:
            raise ValueError("a sandbox needs at least one run in flight, a burst of one, and a refill rate")
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
