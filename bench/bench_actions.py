"""Action throughput: the fan-in mix against the one-EVALSHA endpoint, with
wrk, 50 connections, in the same run.

The mix is what a learner does (bench/mix.py): Reset, then the actions the
fan-in's tour replays, again and again. wrk (bench/wrk/actions.lua) walks a
pool of sandboxes (cookies from first visits to the dive), never two
requests in flight on one sandbox. Each answer carries the outcome, `ver`
and progress, no snapshot. The site runs with its rate limits off. Every
answer is counted by status on both sides, so a non-2xx never passes for
throughput. The two loads take turns, six rounds each (this machine's speed
drifts within minutes; turns put the drift on both sides alike).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench import mix, servers
from bench.wrkrun import combined, run_wrk
from server.widgets import WIDGETS

MIX = mix.describe()
ROUNDS = 6


def preflight(site_url: str, cookie: str) -> None:
    """The walk wrk sends does what a learner's clicks do: every answer 200, and the tour's milestones reached."""
    reached: list[str] = []
    for action in mix.WALK:
        status, body = servers.post(site_url, f"/api/widgets/{mix.WIDGET}/{action}", cookie)
        answer = json.loads(body)
        if status != 200 or "ver" not in answer:
            raise RuntimeError(f"{action} answered {status}: {answer}")
        reached += answer["outcome"].get("reached", [])
    tour = [step.id for step in WIDGETS[mix.WIDGET].tour]
    if sorted(set(reached)) != sorted(tour):
        raise RuntimeError(f"the walk reached {reached}, the tour has {tour}")


def run(site_url: str, baseline_url: str, seconds: float = 10, connections: int = 50,
        sandboxes: int = 200, threads: int = 2) -> dict[str, Any]:
    cookies = servers.cookies(site_url, sandboxes)
    preflight(site_url, cookies[0])
    preflight(site_url, cookies[0])  # twice: the walk starts again from where it ends
    name = servers.lines_file(cookies)
    mix_args = [name, str(threads), mix.WIDGET, ",".join(mix.WALK)]
    settle, rounds = (1.0, ROUNDS) if seconds >= 6 else (0.3, 1)
    baselines: list[dict[str, Any]] = []
    mixes: list[dict[str, Any]] = []
    try:
        run_wrk(baseline_url + "/evalsha", "post.lua", 1, connections, threads)  # warm-ups, not reported
        run_wrk(site_url + "/", "actions.lua", 1, connections, threads, mix_args)
        for _ in range(rounds):
            time.sleep(settle)
            baselines.append(run_wrk(baseline_url + "/evalsha", "post.lua", seconds / rounds, connections, threads))
            time.sleep(settle)
            mixes.append(run_wrk(site_url + "/", "actions.lua", seconds / rounds, connections, threads, mix_args))
        time.sleep(settle)  # what wrk left in flight ends before anything resets those sandboxes again
    finally:
        Path(name).unlink(missing_ok=True)
    baseline, site = combined(baselines), combined(mixes)
    return {"connections": connections, "sandboxes": sandboxes, "mix": MIX, "walk": list(mix.WALK),
            "baseline": baseline, "site_mix": site,
            "ratio": round(site["rps"] / baseline["rps"], 3) if baseline["rps"] else 0.0,
            "round_ratios": [round(m["rps"] / b["rps"], 3) if b["rps"] else 0.0 for b, m in zip(baselines, mixes)]}
