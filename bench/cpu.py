"""CPU meters of the benchmarks: the whole machine's busy cores, and Valkey's CPU."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of every CPU together, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cores_busy(before: tuple[int, int], after: tuple[int, int]) -> float:
    """How many CPUs the whole machine kept busy between two readings."""
    total = after[1] - before[1]
    return round((after[0] - before[0]) / total * (os.cpu_count() or 1), 2) if total else 0.0


async def valkey_cpu(client: Any) -> float:
    info = await client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
