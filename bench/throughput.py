"""Requests per second under wrk, each beside a baseline served the same way
in the same run: the fan-in's actions against the one-EVALSHA endpoint (one
Valkey; a 3-primary cluster, 1 and 2 workers), the dive against a static file.

Actions: the mix is what a learner does (bench/probe.py): Reset, then the
actions the fan-in's tour replays, again and again. wrk (bench/wrk/actions.lua)
walks a pool of sandboxes (cookies from first visits to the dive), never two
requests in flight on one sandbox. Each answer carries the outcome, `ver` and
progress, no snapshot. Every answer is counted by status on both sides, so a
non-2xx never passes for throughput. The two loads take turns, six rounds
each (this machine's speed drifts within minutes; turns put the drift on both
sides alike). On the cluster the site runs as `emqlab serve --cluster
--workers N` runs it (EMQLAB_VALKEY_CLUSTER=1: every widget talks through
redis-py's RedisCluster), and so does the baseline's client.

Pages: the dive for a returning visitor (a sandbox cookie) and a first visit
(none: the middleware mints and signs one), against `/static/site.css`
through the same app's StaticFiles, same worker, same wrk settings.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench import probe, servers
from bench.stats import ratio
from bench.wrkrun import combined, run_wrk
from server.valkey.process import ValkeyCluster
from server.widgets import WIDGETS

MIX = probe.describe()
ROUNDS = 6
PRIMARIES = 3
WORKERS = (1, 2)
CLUSTER_ENV = {"EMQLAB_VALKEY_CLUSTER": "1"}


def preflight(site_url: str, cookie: str) -> None:
    """The walk wrk sends does what a learner's clicks do: every answer 200, and the tour's milestones reached."""
    reached: list[str] = []
    for action in probe.WALK:
        status, body = servers.post(site_url, f"/api/widgets/{probe.WIDGET}/{action}", cookie)
        answer = json.loads(body)
        if status != 200 or "ver" not in answer:
            raise RuntimeError(f"{action} answered {status}: {answer}")
        reached += answer["outcome"].get("reached", [])
    tour = [step.id for step in WIDGETS[probe.WIDGET].tour]
    if sorted(set(reached)) != sorted(tour):
        raise RuntimeError(f"the walk reached {reached}, the tour has {tour}")


def actions(site_url: str, baseline_url: str, seconds: float = 10, connections: int = 50,
            sandboxes: int = 200, threads: int = 2) -> dict[str, Any]:
    cookies = [servers.new_cookie(site_url) for _ in range(sandboxes)]
    preflight(site_url, cookies[0])
    preflight(site_url, cookies[0])  # twice: the walk starts again from where it ends
    name = servers.lines_file(cookies)
    mix_args = [name, str(threads), probe.WIDGET, ",".join(probe.WALK)]
    settle, rounds = (1.0, ROUNDS) if seconds >= 6 else (0.3, 1)
    baselines: list[dict[str, Any]] = []
    mixes: list[dict[str, Any]] = []

    def base(span: float) -> dict[str, Any]:
        return run_wrk(baseline_url + "/evalsha", "request.lua", span, connections, threads, ["", "0", "{}"])

    def site(span: float) -> dict[str, Any]:
        return run_wrk(site_url + "/", "actions.lua", span, connections, threads, mix_args)

    try:
        base(1), site(1)  # warm-ups, not reported
        for _ in range(rounds):
            time.sleep(settle)
            baselines.append(base(seconds / rounds))
            time.sleep(settle)
            mixes.append(site(seconds / rounds))
        time.sleep(settle)  # what wrk left in flight ends before anything resets those sandboxes again
    finally:
        Path(name).unlink(missing_ok=True)
    baseline, mixed = combined(baselines), combined(mixes)
    return {"connections": connections, "sandboxes": sandboxes, "mix": MIX, "walk": list(probe.WALK),
            "baseline": baseline, "site_mix": mixed, "ratio": ratio(mixed["rps"], baseline["rps"]),
            "round_ratios": [ratio(m["rps"], b["rps"]) for b, m in zip(baselines, mixes)]}


def cluster(seconds: float = 10, connections: int = 50, sandboxes: int = 200, threads: int = 2) -> dict[str, Any]:
    """`actions` on a fresh cluster, per number of workers, with the site's logged errors."""
    result: dict[str, Any] = {"primaries": PRIMARIES, "connections": connections, "sandboxes": sandboxes,
                              "mix": MIX, "workers": {}}
    with ValkeyCluster(PRIMARIES) as valkeys:
        for workers in WORKERS:
            with servers.serve_site(valkeys.url, workers, env=CLUSTER_ENV) as site, \
                    servers.serve_baseline(valkeys.url, workers, env=CLUSTER_ENV) as base:
                found = actions(site.url, base.url, seconds, connections, sandboxes, threads)
                result["workers"][str(workers)] = {"baseline": found["baseline"], "site_mix": found["site_mix"],
                                                   "ratio": found["ratio"], "site_errors": site.tracebacks()}
    one, two = (result["workers"][str(n)]["site_mix"]["rps"] for n in WORKERS)
    result["scaling_2_over_1"] = ratio(two, one, 2)
    return result


def pages(site_url: str, seconds: float = 10, connections: int = 50, threads: int = 2) -> dict[str, Any]:
    cookie = servers.new_cookie(site_url)
    status, body = servers.fetch(site_url, servers.DIVE, cookie)
    if status != 200 or b'data-widget="fanin"' not in body:
        raise RuntimeError(f"the dive answered {status} without its fan-in widget")
    settle = 1.0 if seconds >= 5 else 0.2

    def load(path: str, span: float, visitor: str = cookie) -> dict[str, Any]:
        return run_wrk(site_url + path, "request.lua", span, connections, threads, [visitor])

    load(servers.DIVE, 1)  # warm-up
    static = load(servers.STATIC, seconds)
    time.sleep(settle)
    dive = load(servers.DIVE, seconds)
    time.sleep(settle)
    first = load(servers.DIVE, max(1, seconds / 2), "")
    return {"page": servers.DIVE, "static": servers.STATIC, "page_bytes": len(body), "baseline_static": static,
            "dive": dive, "dive_first_visit": first, "ratio": ratio(dive["rps"], static["rps"], 2),
            "ratio_first_visit": ratio(first["rps"], static["rps"], 2)}
