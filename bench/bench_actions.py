"""Action throughput: the fan-in mix against the one-EVALSHA endpoint, with
wrk, 50 connections, in the same run (issue 29's figure).

The mix is what a learner does (bench/mix.py): Reset, then the actions the
fan-in's tour replays, again and again (2 Resets in 14 actions). wrk
(bench/wrk/actions.lua) walks a pool of sandboxes (cookies from first visits
to a dive page), never two requests in flight on one sandbox, each sandbox
one step of the walk per round. Each answer carries the outcome, `ver` and
the learner's progress, no snapshot (every page paints the stream's). The
site runs with its rate limits off (bench/servers.py). Every answer is
counted by status on both sides, so a non-2xx can never pass for throughput.

The two loads take turns, six rounds of a sixth of the time each
(baseline, site, baseline, site, ...): this machine's speed was seen to
drift by half within minutes (and a 3-second round's ratio to swing from
0.27 to 0.41 on the same code), and one long run of each put that drift
into the ratio. Each side's figure is over its whole time; each round's own
ratio is reported too.

    python -m bench.bench_actions [--seconds 10]
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from bench import mix, servers
from bench.wrkrun import combined, run_wrk
from server.widgets import WIDGETS

MIX = mix.describe()
ROUNDS = 6  # turns each load takes (see above)


def preflight(site_url: str, cookie: str) -> list[str]:
    """The walk wrk sends does what a learner's clicks do: every answer 200,
    and the tour's milestones reached (answers, not timings). Returns the
    milestones reached, in order."""
    reached: list[str] = []
    for action in mix.WALK:
        status, body = servers.post(site_url, f"/api/widgets/{mix.WIDGET}/{action}", cookie)
        answer = json.loads(body)
        if status != 200 or "ver" not in answer or "snapshot" in answer:
            raise RuntimeError(f"{action} answered {status}: {answer}")
        reached += answer["outcome"].get("reached", [])
    tour = [step.id for step in WIDGETS[mix.WIDGET].tour]
    if sorted(set(reached)) != sorted(tour):
        raise RuntimeError(f"the walk reached {reached}, the tour has {tour}")
    return reached


class Meter:
    """CPU seconds spent by Valkey (INFO cpu) and by each server process (/proc), per load."""

    def __init__(self, valkey_url: str | None, processes: dict[str, Callable[[], float]]) -> None:
        self.valkey = redis.Redis.from_url(valkey_url) if valkey_url else None
        self.processes = processes
        self.spent: dict[str, dict[str, float]] = {}
        self.commands: dict[str, dict[str, list[float]]] = {}  # load -> command -> [calls, µs]

    def commandstats(self) -> dict[str, tuple[float, float]]:
        if self.valkey is None:
            return {}
        stats = self.valkey.info("commandstats")
        return {name.removeprefix("cmdstat_"): (float(v["calls"]), float(v["usec"])) for name, v in stats.items()}

    def now(self) -> dict[str, float]:
        found = {name: cpu() for name, cpu in self.processes.items()}
        if self.valkey is not None:
            info = self.valkey.info("cpu")
            found["valkey"] = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
        return found

    def during(self, load: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        before, stats = self.now(), self.commandstats()
        result = work()
        after, stats_after = self.now(), self.commandstats()
        spent = self.spent.setdefault(load, {})
        for name in after:
            spent[name] = spent.get(name, 0.0) + after[name] - before[name]
        commands = self.commands.setdefault(load, {})
        for name, (calls, usec) in stats_after.items():
            was = stats.get(name, (0.0, 0.0))
            found = commands.setdefault(name, [0.0, 0.0])
            found[0] += calls - was[0]
            found[1] += usec - was[1]
        return result

    def commands_per_request(self, load: str, requests: int, top: int = 8) -> list[dict[str, Any]]:
        """Valkey's own time per request by command (INFO commandstats), dearest first."""
        found = sorted(self.commands.get(load, {}).items(), key=lambda kv: -kv[1][1])[:top]
        return [{"command": name, "calls": round(calls / requests, 2), "us": round(usec / requests, 1)}
                for name, (calls, usec) in found if requests and calls > 0]

    def per_request(self, load: str, requests: int) -> dict[str, float]:
        """µs of CPU per request of `load`, by process."""
        return {name: round(seconds / requests * 1e6, 1) for name, seconds in self.spent.get(load, {}).items()
                if requests}

    def close(self) -> None:
        if self.valkey is not None:
            self.valkey.close()


def run(site_url: str, baseline_url: str, seconds: float = 10, connections: int = 50,
        sandboxes: int = 200, threads: int = 2, valkey_url: str | None = None,
        cpu: dict[str, Callable[[], float]] | None = None) -> dict[str, Any]:
    """The baseline, then the site's mix, each after a 1 s warm-up (not reported).
    With `valkey_url` (and `cpu`: each server's CPU seconds by name), what each
    load cost Valkey and the servers, per request."""
    cookies = servers.cookies(site_url, sandboxes)
    preflight(site_url, cookies[0])
    preflight(site_url, cookies[0])  # twice: the walk starts again from where it ends
    with tempfile.NamedTemporaryFile("w", suffix=".cookies", prefix="emqlab-bench-", delete=False) as handle:
        handle.write("\n".join(cookies))
    mix_args = [handle.name, str(threads), mix.WIDGET, ",".join(mix.WALK)]
    settle = 1.0 if seconds >= 5 else 0.3
    rounds = ROUNDS if seconds >= 6 else 1
    baselines: list[dict[str, Any]] = []
    mixes: list[dict[str, Any]] = []
    meter = Meter(valkey_url, cpu or {})
    try:
        run_wrk(baseline_url + "/evalsha", "post.lua", 1, connections, threads)
        run_wrk(site_url + "/", "actions.lua", 1, connections, threads, mix_args)
        for _ in range(rounds):
            time.sleep(settle)
            baselines.append(meter.during("baseline", lambda: run_wrk(
                baseline_url + "/evalsha", "post.lua", seconds / rounds, connections, threads)))
            time.sleep(settle)
            mixes.append(meter.during("site", lambda: run_wrk(
                site_url + "/", "actions.lua", seconds / rounds, connections, threads, mix_args)))
        # the requests wrk left in flight finish before anything resets those sandboxes again
        time.sleep(settle)
    finally:
        Path(handle.name).unlink(missing_ok=True)
        meter.close()
    baseline, site = combined(baselines), combined(mixes)
    return {
        "connections": connections,
        "sandboxes": sandboxes,
        "mix": MIX,
        "walk": list(mix.WALK),
        "baseline": baseline,
        "site_mix": site,
        "ratio": round(site["rps"] / baseline["rps"], 3) if baseline["rps"] else 0.0,
        "round_ratios": [round(m["rps"] / b["rps"], 3) if b["rps"] else 0.0 for b, m in zip(baselines, mixes)],
        "cpu_us_per_request": {"baseline": meter.per_request("baseline", baseline["requests"]),
                               "site": meter.per_request("site", site["requests"])},
        "valkey_commands_per_request": {"baseline": meter.commands_per_request("baseline", baseline["requests"]),
                                        "site": meter.commands_per_request("site", site["requests"])},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return servers.main_with_baseline(run, "action throughput: the fan-in mix vs one EVALSHA", 10, argv)


if __name__ == "__main__":
    main()
