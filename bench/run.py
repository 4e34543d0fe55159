"""`make bench`: start a Valkey, the site and the baseline app, run every
benchmark, and write docs/PERFORMANCE.md (bench/report.py lays it out).

    python -m bench.run            # the full run
    python -m bench.run --quick    # every benchmark for about a second (checks the harness, not the numbers)

Every benchmark is a module under bench/ with a `run(...) -> dict`; this one
starts the processes and calls them in order. A benchmark that fails is
reported in its row; the others still run. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    bench_commands,
    bench_fanout,
    bench_grader,
    bench_learners,
    bench_paint,
    bench_reset,
    servers,
    throughput,
)
from bench.report import render
from server.valkey.process import ValkeyProcess

OUT = servers.ROOT / "docs" / "PERFORMANCE.md"
FULL: dict[str, Any] = {"seconds": 10, "clicks": 200, "clients": 1000, "fan_actions": 12, "sandboxes": 200,
                        "load_rate": 100.0, "load_sandboxes": 100, "racers": bench_paint.RACERS,
                        "levels": bench_learners.LEVELS, "window": 30.0, "period": bench_learners.PERIOD,
                        "probe_every": bench_learners.PROBE_EVERY, "crowd": 5000, "fair_window": 20.0,
                        "grader_runs": 200, "grader_seconds": 5.0, "grader_tries": 5,
                        "dives": bench_paint.DIVES, "forms": bench_paint.FORMS}
QUICK: dict[str, Any] = {"seconds": 1, "clicks": 6, "clients": 50, "fan_actions": 3, "sandboxes": 120,
                         "load_rate": 50.0, "load_sandboxes": 20, "racers": 3, "levels": (10, 20), "window": 1.0,
                         "period": 1.0, "probe_every": 0.1, "crowd": 200, "fair_window": 1.0, "grader_runs": 3,
                         "grader_seconds": 1.0, "grader_tries": 1,
                         "dives": bench_paint.DIVES[:1], "forms": ("desktop",)}


def first_line(command: list[str]) -> str:
    """What a tool says of its version (wrk's, before its copyright)."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        return (done.stdout or done.stderr).strip().splitlines()[0].split(" Copyright")[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not found"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> dict[str, str]:
    import redis
    import starlette
    import uvicorn

    from server.valkey.engine import binary

    info = Path("/proc/cpuinfo").read_text()
    mem_kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"  # what uvicorn's "auto" picks here
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    return {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "cpus": str(os.cpu_count()),
            "cpu": next((x.split(":", 1)[1].strip() for x in info.splitlines() if x.startswith("model name")), "?"),
            "ram": f"{mem_kb / 1024 / 1024:.1f} GiB", "kernel": platform.release(),
            "load average at start": load_average(), "python": platform.python_version(),
            "valkey": first_line([binary(), "--version"]), "wrk": first_line(["wrk", "-v"]),
            "chromium": first_line([bench_paint.CHROMIUM, "--version"]),
            "uvicorn": f"{uvicorn.__version__} (loop {loop}, http {http}, no access log)",
            "starlette / redis-py": f"{starlette.__version__} / {redis.__version__}"}


def run_all(quick: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    p = QUICK if quick else FULL
    results: dict[str, Any] = {"quick": quick, "machine": machine(), "load": {}, "site_errors": 0}

    def attempt(key: str, what: str, measure: Callable[[], dict[str, Any]],
                served: servers.Served | None = None) -> None:
        results["load"][what] = load_average()
        log(f"{what} ...")
        try:
            results[key] = measure()
        except Exception as exc:  # noqa: BLE001 - one broken figure is reported, never hides the rest
            results[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            log(f"  {key} failed: {results[key]['error']}")
        results["site_errors"] += served.tracebacks() if served else results[key].get("site_errors", 0)

    with ValkeyProcess() as valkey:
        attempt("commands", "round trips and commands per action", lambda: bench_commands.run(valkey.url))
        with servers.serve_site(valkey.url) as site, servers.serve_baseline(valkey.url) as base:
            attempt("actions", "action throughput", lambda: throughput.actions(
                site.url, base.url, p["seconds"], 50, p["sandboxes"]), site)
            attempt("paint", "click to settled: idle, under load, while others race", lambda: bench_paint.run(
                site.url, base.url, p["clicks"], p["load_rate"], p["load_sandboxes"], racers=p["racers"]), site)
            attempt("pages", "pages", lambda: throughput.pages(site.url, p["seconds"]), site)
            attempt("footprint", "footprint", lambda: bench_reset.footprint(site.url, valkey.url), site)
        with servers.serve_site(valkey.url) as fresh:  # every dive a first visit, as a search engine's
            attempt("lighthouse", "Lighthouse on every dive", lambda: bench_paint.lighthouse(
                fresh.url, p["dives"], p["forms"]), fresh)
        with servers.serve_site(valkey.url) as fresh:
            attempt("fanout", "fan-out", lambda: bench_fanout.run(fresh, p["clients"], p["fan_actions"]), fresh)
        with servers.serve_site(valkey.url) as fresh:
            attempt("reset", "reset with idle sandboxes vs none", lambda: bench_reset.run(
                fresh.url, valkey.url, quick=quick, crowd=p["crowd"]), fresh)
        attempt("fairness", "fairness", lambda: bench_learners.fairness(valkey.url, p["fair_window"]))
        attempt("learners", "learners this machine holds", lambda: bench_learners.run(
            valkey.url, tuple(p["levels"]), p["window"], p["period"], p["probe_every"], log=log))
        results["site_errors"] += (results["learners"].get("site") or {}).get("server_errors", 0)
    attempt("grader", "the exercise grader", lambda: bench_grader.run(
        p["grader_runs"], p["grader_seconds"], p["grader_tries"]))
    attempt("cluster", "cluster", lambda: throughput.cluster(p["seconds"], 50, p["sandboxes"]))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run every benchmark and write docs/PERFORMANCE.md")
    parser.add_argument("--quick", action="store_true", help="about a second per benchmark")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--json", default="", help="also write the raw results here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    result = run_all(args.quick, log=lambda line: print(f"bench: {line}", flush=True))
    Path(args.out).write_text(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"bench: wrote {args.out} in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
