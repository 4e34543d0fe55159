"""Run wrk with one of bench/wrk/*.lua and parse the line its `done` prints."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

WRK_DIR = Path(__file__).resolve().parent / "wrk"


def wrk_binary() -> str:
    found = shutil.which("wrk")
    if not found:
        raise RuntimeError("wrk not found: `make bench` installs Debian's wrk")
    return found


def wrk_version() -> str:
    done = subprocess.run([wrk_binary(), "-v"], capture_output=True, text=True, check=False)
    return (done.stdout or done.stderr).splitlines()[0].split(" Copyright")[0].strip()


def run_wrk(url: str, script: str, seconds: float, connections: int = 50, threads: int = 2,
            args: list[str] | None = None) -> dict[str, Any]:
    """wrk -t THREADS -c CONNECTIONS -d SECONDS; returns requests/s, latency (ms), errors and answers by status."""
    duration = max(1, round(seconds))
    command = [wrk_binary(), "-t", str(threads), "-c", str(connections), "-d", f"{duration}s",
               "--timeout", "10s", "-s", str(WRK_DIR / script), url]
    if args:
        command += ["--", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60, check=False)
    line = next((row for row in done.stdout.splitlines() if row.startswith("WRKJSON ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stdout[-400:]} {done.stderr[-400:]}")
    raw = json.loads(line[len("WRKJSON "):])
    seconds_run = raw["duration_us"] / 1e6
    lat = raw["latency_us"]
    codes: dict[str, int] = raw.get("codes", {})
    return {
        "requests": raw["requests"],
        "seconds": round(seconds_run, 2),
        "rps": round(raw["requests"] / seconds_run, 1) if seconds_run else 0.0,
        "latency_ms": {k: round(lat[k] / 1000, 2) for k in ("mean", "p50", "p90", "p99", "max")},
        "errors": raw["errors"],
        "status_codes": codes,
        # every answer the script counted outside 2xx (wrk's own "status" error counts only >= 400)
        "non_2xx": sum(n for code, n in codes.items() if not code.startswith("2")),
        "connections": connections,
        "threads": threads,
    }


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one load as one: requests, time, errors and answers
    summed (so requests/s is over the whole time); latency the median run's
    mean, p50 and p90, the worst p99 and max."""
    if len(runs) == 1:
        return runs[0]
    seconds = sum(r["seconds"] for r in runs)
    requests = sum(r["requests"] for r in runs)
    codes: dict[str, int] = {}
    for run in runs:
        for code, n in run["status_codes"].items():
            codes[code] = codes.get(code, 0) + n
    errors: dict[str, int] = {}
    for run in runs:
        for kind, n in run["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
    middle = sorted(runs, key=lambda r: r["rps"])[len(runs) // 2]["latency_ms"]
    worst = {k: max(r["latency_ms"][k] for r in runs) for k in ("p99", "max")}
    return {
        "requests": requests,
        "seconds": round(seconds, 2),
        "rps": round(requests / seconds, 1) if seconds else 0.0,
        "latency_ms": {"mean": middle["mean"], "p50": middle["p50"], "p90": middle["p90"], **worst},
        "errors": errors,
        "status_codes": codes,
        "non_2xx": sum(r["non_2xx"] for r in runs),
        "connections": runs[0]["connections"],
        "threads": runs[0]["threads"],
        "runs": len(runs),
    }
