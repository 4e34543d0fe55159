"""The grader pool's settings, each with its ``EMQLAB_GRADER*`` variable (docs/LIMITS.md).

A value that is not a positive whole number stops the site at start with a sentence naming the
variable, rather than grading with a limit nobody chose.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from server.exercises.grader import Limits
from server.exercises.grader_process import ProcessLimits

# Each variable -> (None: the pool's field | "limits" | "process", the field it sets)
VARIABLES = {
    "EMQLAB_GRADERS": (None, "graders"), "EMQLAB_GRADER_QUEUE": (None, "queue_bound"),
    "EMQLAB_GRADER_ADDRESS_RUNS": (None, "address_runs"), "EMQLAB_GRADER_SANDBOX_RUNS": (None, "sandbox_in_flight"),
    "EMQLAB_GRADER_SANDBOX_BURST": (None, "sandbox_burst"),
    "EMQLAB_GRADER_SANDBOX_PER_MIN": (None, "sandbox_per_minute"),
    "EMQLAB_GRADER_SCRIPT_MS": ("limits", "script_ms"), "EMQLAB_GRADER_KILL_MS": ("limits", "kill_ms"),
    "EMQLAB_GRADER_BUDGET_MS": ("limits", "budget_ms"),
    "EMQLAB_GRADER_ADDRESS_MB": ("process", "address_space_mb"),
    "EMQLAB_GRADER_MAXMEMORY_MB": ("process", "maxmemory_mb"),
}


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
        if self.address_runs < 1:
            raise ValueError("an address needs at least one place in the line")
        if self.sandbox_in_flight < 1 or self.sandbox_burst < 1 or self.sandbox_per_minute <= 0:
            raise ValueError("a sandbox needs at least one run in flight, a burst of one, and a refill rate")
        if not 0 < self.limits.script_ms < self.limits.kill_ms:
            raise ValueError("a script's time must be positive and shorter than the SIGKILL deadline")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PoolSettings:
        """The defaults, with every ``EMQLAB_GRADER*`` variable that is set."""
        source = os.environ if env is None else env
        given: dict[str | None, dict[str, object]] = {None: {}, "limits": {}, "process": {}}
        for name, (part, field_name) in VARIABLES.items():
            raw = source.get(name)
            if not raw:
                continue
            try:
                value = int(raw)
            except ValueError:
                raise ValueError(f"{name} must be a whole number, not {raw!r}") from None
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
            given[part][field_name] = value
        return cls(**given[None], limits=Limits(**given["limits"]),  # type: ignore[arg-type]
                   process=ProcessLimits(**given["process"]))  # type: ignore[arg-type]
