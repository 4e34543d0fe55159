"""Percentiles, the distribution and the ratios every benchmark reports (one rule for all)."""

from __future__ import annotations

import statistics


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile (0 for no values): p99 of 100 samples is the 99th."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def distribution(values: list[float], scale: float = 1.0) -> dict[str, float]:
    """p50, p95, p99, max and mean of ``values`` times ``scale`` (1000: seconds to ms), one decimal."""
    def at(pct: float) -> float:
        return round(percentile(values, pct) * scale, 1)

    return {
        "p50": at(50),
        "p95": at(95),
        "p99": at(99),
        "max": round(max(values) * scale, 1) if values else 0.0,
        "mean": round(statistics.fmean(values) * scale, 1) if values else 0.0,
        "samples": len(values),
    }


def ratio(figure: float, base: float, places: int = 3) -> float:
    """`figure / base` to `places` decimals; 0 when the baseline measured nothing."""
    return round(figure / base, places) if base else 0.0
