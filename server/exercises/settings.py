"""The grader pool's settings, each with its ``EMQLAB_GRADER*`` variable (docs/LIMITS.md).

The defaults fit a class on a small machine; a value that is not a positive whole number stops
the site at start with a sentence naming the variable, rather than grading with a limit nobody chose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from server.exercises.process import ProcessLimits
from server.exercises.watchdog import Limits


@dataclass(frozen=True)
class PoolSettings:
    graders: int = 2
    queue_bound: int = 32
    address_runs: int = 16  # half the line: one address cannot hold it
    sandbox_in_flight: int = 2
    sandbox_burst: int = 6
    sandbox_per_minute: float = 30.0
    limits: Limits = field(default_factory=Limits)
    process: ProcessLimits = field(default_factory=ProcessLimits)

    def __post_init__(self) -> None:
        if self.graders < 1:
            raise ValueError("the grader pool needs at least one grader")
        if self.queue_bound < 0:
            raise ValueError("the grader queue bound cannot be negative")
        watch = self.limits
        if not 0 < watch.script_ms < watch.kill_ms:
            raise ValueError("a script's time must be positive and shorter than the SIGKILL deadline")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PoolSettings:
        """The defaults, with every ``EMQLAB_GRADER*`` variable that is set."""
        source = os.environ if env is None else env

        def number(name: str, default: int) -> int:
            raw = source.get(name)
            if raw is None or raw == "":
                return default
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"{name} must be a whole number, not {raw!r}") from None
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
            return value

        limits = Limits(
            script_ms=number("EMQLAB_GRADER_SCRIPT_MS", Limits.script_ms),
            kill_ms=number("EMQLAB_GRADER_KILL_MS", Limits.kill_ms),
            budget_ms=number("EMQLAB_GRADER_BUDGET_MS", Limits.budget_ms),
        )
        process = ProcessLimits(
            address_space_mb=number("EMQLAB_GRADER_ADDRESS_MB", ProcessLimits.address_space_mb),
            maxmemory_mb=number("EMQLAB_GRADER_MAXMEMORY_MB", ProcessLimits.maxmemory_mb),
        )
        return cls(
            graders=number("EMQLAB_GRADERS", cls.graders),
            queue_bound=number("EMQLAB_GRADER_QUEUE", cls.queue_bound),
            address_runs=number("EMQLAB_GRADER_ADDRESS_RUNS", cls.address_runs),
            sandbox_in_flight=number("EMQLAB_GRADER_SANDBOX_RUNS", cls.sandbox_in_flight),
            sandbox_burst=number("EMQLAB_GRADER_SANDBOX_BURST", cls.sandbox_burst),
            sandbox_per_minute=float(number("EMQLAB_GRADER_SANDBOX_PER_MIN", int(cls.sandbox_per_minute))),
            limits=limits,
            process=process,
        )
