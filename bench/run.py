"""`make bench`: start a Valkey, the site and the baseline app, run every
benchmark, and write docs/PERFORMANCE.md (bench/report.py lays it out: the
machine, one table of every figure beside its same-run baseline, the ratio,
the target and met/missed, the learners the machine holds, the round trips
and commands per action, notes).

    python -m bench.run            # the full run
    python -m bench.run --quick    # every benchmark for about a second (checks the harness, not the numbers)
    python -m bench.run --cluster-only   # only the cluster figures, spliced into the existing report

Every benchmark is its own module under bench/ with a `run(...) -> dict`;
this module only starts the processes and calls them in order. Nothing here
asserts a time: a missed target is reported, never hidden.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    bench_actions,
    bench_bulk,
    bench_cluster,
    bench_commands,
    bench_fairness,
    bench_fanout,
    bench_footprint,
    bench_grader,
    bench_learners,
    bench_pages,
    bench_paint,
    bench_reset,
    mix,
    servers,
)
from bench.profile import Recording
from bench.report import cluster_rows, render, splice_cluster
from bench.report_notes import render_cluster
from bench.wrkrun import run_wrk, wrk_version
from server.valkey.process import ValkeyProcess

OUT = servers.ROOT / "docs" / "PERFORMANCE.md"

FULL: dict[str, Any] = {
        "seconds": 10, "clicks": 200, "clients": 1000, "fan_actions": 12, "sandboxes": 200, "bulk_flows": 1000,
        "bulk_seconds": 2.0, "profile_seconds": 6, "load_rate": 100.0, "load_sandboxes": 100,
        "learner_levels": bench_learners.LEVELS, "learner_window": 30.0, "learner_period": bench_learners.PERIOD,
        "learner_settle": 3.0, "probe_every": bench_learners.PROBE_EVERY,
        "learner_profile_at": bench_learners.TARGET_LEARNERS,
        "fair_window": 20.0, "grader_runs": 200, "grader_seconds": 5.0, "grader_tries": 5}
QUICK: dict[str, Any] = {
         "seconds": 1, "clicks": 12, "clients": 50, "fan_actions": 3, "sandboxes": 120, "bulk_flows": 50,
         "bulk_seconds": 0.0, "profile_seconds": 0, "load_rate": 100.0, "load_sandboxes": 100,
         "learner_levels": (10, 20), "learner_window": 1.0, "learner_period": 1.0, "learner_settle": 0.3,
         "probe_every": 0.1, "learner_profile_at": None,
         "fair_window": 1.0, "grader_runs": 3, "grader_seconds": 1.0, "grader_tries": 1}


# -- the machine ---------------------------------------------------------------

def _first(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not found"


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = "unknown"
    try:
        rows = Path("/proc/meminfo").read_text().splitlines()
        kb = int(next(row for row in rows if row.startswith("MemTotal")).split()[1])
        ram = f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    load = load_average()
    import redis
    import starlette
    import uvicorn

    flavour = servers.uvicorn_flavour()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": str(os.cpu_count()),
        "cpu": cpu,
        "ram": ram,
        "kernel": platform.release(),
        "load average at start": load,
        "python": platform.python_version(),
        "valkey": _first(["valkey-server", "--version"]),
        "chromium": bench_paint.chromium_version(),
        "wrk": wrk_version(),
        "uvicorn": f"{uvicorn.__version__} (1 worker, loop {flavour['loop']}, http {flavour['http']}, "
                   "--log-level warning --no-access-log)",
        "starlette / redis-py": f"{starlette.__version__} / {redis.__version__}",
    }


# -- the run -------------------------------------------------------------------

def load_average() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "unknown"


def run_all(quick: bool = False, log: Any = print) -> dict[str, Any]:
    p = QUICK if quick else FULL
    results: dict[str, Any] = {"quick": quick, "params": p, "machine": machine(), "load": {}}

    def say(line: str) -> None:
        """A step's line, and the machine's load as it starts (other work shares these CPUs)."""
        if not line.startswith(" "):
            results["load"][line.split(":")[0].split(" (")[0].rstrip(". ")] = load_average()
        log(line)

    def attempt(key: str, measure: Callable[[], dict[str, Any]]) -> None:
        """One benchmark's results; a failure is reported in its row and the others still run."""
        try:
            results[key] = measure()
        except Exception as exc:  # noqa: BLE001 - one broken figure is reported, never hides the rest
            results[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            say(f"  {key} failed: {results[key]['error']}")

    def errors_of(served: servers.Served) -> None:
        results["site_errors"] = results.get("site_errors", 0) + served.tracebacks()

    with ValkeyProcess() as valkey:
        say("round trips and commands per action ...")
        attempt("commands", lambda: {"complete_child": bench_commands.fanin_complete_child(valkey.url),
                                     "tours": bench_commands.run(valkey.url)})
        with servers.serve_site(valkey.url) as site, servers.serve_baseline(valkey.url) as base:
            say("action throughput: the fan-in mix vs one EVALSHA ...")
            attempt("actions", lambda: bench_actions.run(
                site.url, base.url, p["seconds"], 50, p["sandboxes"], valkey_url=valkey.url,
                cpu={"site": site.cpu_seconds, "baseline": base.cpu_seconds}))
            if p["profile_seconds"] and "error" not in results["actions"]:
                say("  profiling the action mix with py-spy ...")
                results["actions"]["profile"] = profile_actions(site, p["profile_seconds"], p["sandboxes"])
            say(f"click to settled, idle and with {p['load_sandboxes']} sandboxes at {p['load_rate']}/s ...")
            attempt("paint", lambda: bench_paint.run(site.url, base.url, p["clicks"], p["load_rate"],
                                                     p["load_sandboxes"]))
            say("pages ...")
            attempt("pages", lambda: bench_pages.run(site.url, p["seconds"]))
            say("bulk flows ...")
            attempt("bulk", lambda: bench_bulk.run(valkey.url, p["bulk_flows"], p["bulk_seconds"]))
            say("footprint ...")
            attempt("footprint", lambda: bench_footprint.run(site.url, valkey.url))
            errors_of(site)
        say(f"fan-out ({p['clients']} streams, fresh site process) ...")
        with servers.serve_site(valkey.url) as fresh:
            attempt("fanout", lambda: bench_fanout.run(fresh, p["clients"], p["fan_actions"]))
            errors_of(fresh)
        say("reset with 5,000 idle sandboxes vs none ...")
        with servers.serve_site(valkey.url) as fresh:
            attempt("reset", lambda: bench_reset.run(fresh.url, valkey.url, quick=quick,
                                                     crowd=500 if quick else 5000))
            errors_of(fresh)
        say("fairness: another learner's actions while one floods (rate limits on) ...")
        attempt("fairness", lambda: bench_fairness.run(valkey.url, p["fair_window"]))
        results["site_errors"] += results["fairness"].get("site_errors", 0)
        say(f"learners this machine holds: {', '.join(map(str, p['learner_levels']))} ...")
        attempt("learners", lambda: bench_learners.run(
            valkey.url, tuple(p["learner_levels"]), p["learner_window"], p["learner_period"], p["probe_every"],
            p["learner_settle"], log=say, profile_at=p["learner_profile_at"]))
        results["site_errors"] += (results["learners"].get("site") or {}).get("server_errors", 0)
    say("the exercise grader ...")
    attempt("grader", lambda: bench_grader.run(p["grader_runs"], p["grader_seconds"], p["grader_tries"]))
    say(f"cluster: action throughput on a {bench_cluster.PRIMARIES}-primary cluster, 1 and 2 workers ...")
    attempt("cluster", lambda: run_cluster(p))
    return results


def run_cluster(p: dict[str, Any]) -> dict[str, Any]:
    # the single-server reference is the throughput figure itself when the whole report runs
    return bench_cluster.run(p["seconds"], 50, p["sandboxes"], single_reference=False)


def profile_actions(site: servers.Served, seconds: float, sandboxes: int) -> dict[str, Any]:
    cookies = servers.cookies(site.url, sandboxes)
    with tempfile.NamedTemporaryFile("w", suffix=".cookies", delete=False) as handle:
        handle.write("\n".join(cookies))
    try:
        with Recording(site.proc.pid, seconds) as rec:
            time.sleep(0.3)
            run_wrk(site.url + "/", "actions.lua", seconds, 50, 2, [handle.name, "2", mix.WIDGET, ",".join(mix.WALK)])
        return rec.top()
    finally:
        Path(handle.name).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run every benchmark and write docs/PERFORMANCE.md")
    parser.add_argument("--quick", action="store_true", help="about a second per benchmark")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--json", default="", help="also write the raw results here")
    parser.add_argument("--cluster-only", action="store_true",
                        help="run only the cluster benchmark and splice its figures into the existing report")
    args = parser.parse_args(argv)
    started = time.monotonic()
    p = QUICK if args.quick else FULL
    out = Path(args.out)
    if args.cluster_only:
        print("bench: cluster: action throughput on a 3-primary cluster, 1 and 2 workers ...", flush=True)
        result = bench_cluster.run(p["seconds"], 50, p["sandboxes"], single_reference=True)
        out.write_text(splice_cluster(out.read_text() if out.exists() else "# Performance\n",
                                      render_cluster(result, p["seconds"]), cluster_rows(result)))
    else:
        result = run_all(args.quick, log=lambda s: print(f"bench: {s}", flush=True))
        out.write_text(render(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"bench: wrote {args.out} in {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
