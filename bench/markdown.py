"""The Markdown tables of docs/PERFORMANCE.md (bench/report.py, bench/report_notes.py)."""

from __future__ import annotations

from itertools import zip_longest
from typing import Any


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


WRK_HEADER = ["run", "req/s", "requests", "p50 ms", "p99 ms", "answers", "non-2xx", "socket errors"]


def wrk_row(label: str, w: dict[str, Any]) -> list[str]:
    codes = ", ".join(f"{k}: {v}" for k, v in sorted(w.get("status_codes", {}).items())) or "—"
    return [label, f"{w['rps']:,.1f}", f"{w['requests']:,}", str(w["latency_ms"]["p50"]), str(w["latency_ms"]["p99"]),
            codes, str(w.get("non_2xx", 0)), str(sum(w["errors"].values()) - w["errors"].get("status", 0))]


def profile_table(prof: dict[str, Any]) -> str:
    if "error" in prof:
        return f"_no profile: {prof['error']} (install py-spy to get one)_"
    return table(["% of samples in (ours)", "frame", "% self", "frame (self time)"],
                 [[str(a["share"]) if a else "", f"`{a['frame']}`" if a else "",
                   str(b["share"]) if b else "", f"`{b['frame']}`" if b else ""]
                  for a, b in zip_longest(prof["ours_inclusive"], prof["self"])])
