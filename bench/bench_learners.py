"""How many learners this machine holds (issue 29's figure), beside a bare
one-EVALSHA endpoint with a bare SSE stream, in the same run.

A simulated learner (bench/crowd.py, a process of its own) has its page's
live stream open and acts once every 10 s in its own sandbox, walking the
fan-in's tour (bench/mix.py). Learners are added level by level (250, 500,
1,000, 1,500, 2,000, 2,500, 3,000, 4,000), arriving at 50 a second; at each
level, a whole period (10 s) after the last one arrived, a probe learner
(this process, its own sandbox and stream) acts every 0.1 s for a window
and times each click to its frame: from sending the POST to its stream bringing the widget's
snapshot with a `ver` at least the answer's (the frame may come before the
answer; it is the frame that paints every page). The climb stops at the
first level where the probe's p99 passes 100 ms or any answer fails (a
non-2xx, a connection error, a stream that failed, a learner that could not
arrive, a probe frame that never came): the knee is the last level that held.

The bare side is the same crowd and probe against bench/baseline_app.py:
`POST /act/<learner>` (one EVALSHA that INCRs the learner's key and
PUBLISHes it on one channel) and `GET /stream/<learner>` (fed by the
process's one SUBSCRIBE). Each side has a fresh server process.

At every level the window's CPU is priced per action (every action of the
crowd and the probe in the window): valkey-server's (INFO cpu,
used_cpu_sys + used_cpu_user), also net of what Valkey spends with nobody
acting (measured before the first level: its cron, the server's heartbeat),
and the site's (its uvicorn process, from /proc). An action's cost
independent of how many learners are online shows as a flat Valkey CPU per
action from level to level.

Each side runs WORKERS uvicorn workers, one per core of this machine, as
`emqlab serve --workers 2` would run here (one worker saturates its core
first: a Python process, not Valkey, is what runs out).

The site runs with its rate limits off (bench/servers.py) and a stream
lifetime of an hour: every learner's stream opened within seconds of the
others', so with the default 10 minutes they would all reconnect together
in the middle of a level, a burst no class makes.

    python -m bench.bench_learners [--levels 250,500,1000] [--window 25] [--side site|bare|both]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import redis.asyncio as aioredis

from bench import mix, servers
from bench.cpu import cores_busy, machine_jiffies, valkey_cpu
from bench.crowd import CrowdProcess
from bench.probe import Probe
from bench.profile import Recording
from bench.rawhttp import raise_fd_limit

LEVELS = (250, 500, 1000, 1500, 2000, 2500, 3000, 4000)
P99_LIMIT_MS = 100.0  # the probe's click-to-frame p99 a level must stay under
TARGET_LEARNERS = 2000  # the site's knee must be above this
CPU_RATIO = 1.5  # Valkey CPU per action, highest held level / lowest: "independent" within this
PERIOD = 10.0  # seconds between one learner's actions
PROBE_EVERY = 0.1  # seconds between the probe's actions: 300 in a 30 s window, so p99 is not the max
STREAM_LIFETIME = "3600"  # see the module's docstring
WORKERS = 2  # uvicorn workers on each side: one per core, as `emqlab serve --workers 2` runs on this machine


def held(level: dict[str, Any]) -> bool:
    """Whether a level held: the probe's p99 within the limit, and no answer failed."""
    probe, crowd = level["probe"], level["crowd"]["window"]
    return bool(level["arrival_failures"] == 0 and probe["click_to_frame_ms"]["p99"] <= P99_LIMIT_MS
            and probe["non_2xx"] == probe["errors"] == probe["frames_missing"] == 0
            and crowd["non_2xx"] == crowd["action_errors"] == crowd["stream_failures"] == 0)


async def profiled(served: servers.Served, seconds: float) -> dict[str, Any]:
    """py-spy on the server for `seconds` while the crowd goes on (after a level's window: not in its figures)."""
    with Recording(served.proc.pid, seconds) as recording:
        await asyncio.sleep(seconds + 0.5)
    return recording.top()


async def climb(served: servers.Served, kind: str, valkey_url: str, levels: tuple[int, ...], window: float,
                period: float, probe_every: float, settle: float, log: Any = print,
                profile_at: int | None = None, keep_going: bool = False) -> dict[str, Any]:
    """Raise the crowd level by level until one does not hold (`keep_going`:
    through every level, to see the curve past a noisy one; the knee is still
    the last level before the first that did not hold); every level's figures,
    and a profile of the server at `profile_at` learners, if reached."""
    stream = servers.page_stream(served.url) if kind == "site" else ""
    valkey = aioredis.Redis.from_url(valkey_url)
    crowd = await CrowdProcess.start(served.url, kind, period, stream)
    probe = Probe(served, kind, stream)
    found: list[dict[str, Any]] = []
    profile: dict[str, Any] | None = None
    try:
        await probe.open()
        # Valkey's own work with nobody acting (its cron, the server's heartbeat):
        # taken off each window's CPU before it is divided by the window's actions,
        # or a level with few actions would look dearer per action than it is
        quiet = max(2.0, settle)
        before = await valkey_cpu(valkey)
        await asyncio.sleep(quiet)
        idle_rate = (await valkey_cpu(valkey) - before) / quiet
        for learners in levels:
            grown = await crowd.ask(f"grow {learners}")
            # a whole period after the last arrival: every new learner has acted once and
            # the landings of the arrivals are behind the server before the window opens
            await asyncio.sleep(max(settle, period))
            marked = await crowd.ask("mark")
            cpu_valkey, cpu_site, cpu_own, jiffies = (await valkey_cpu(valkey), served.cpu_seconds(),
                                                      time.process_time(), machine_jiffies())
            probed = await probe.measure(window, probe_every)
            del probed["raw"]
            stats = await crowd.ask("stats")
            spent_valkey, spent_site = await valkey_cpu(valkey) - cpu_valkey, served.cpu_seconds() - cpu_site
            spent_own, busy = time.process_time() - cpu_own, cores_busy(jiffies, machine_jiffies())
            spent_crowd = stats["cpu_seconds"] - marked["cpu_seconds"]
            actions = stats["window"]["actions"] + probed["actions"]
            net = max(0.0, spent_valkey - idle_rate * stats["window"]["seconds"])
            level = {"learners": learners, "online": stats["online"],
                     "arrival_seconds": grown["seconds"],
                     "arrival_failures": grown["failed"] + stats["arrival_failures"],
                     "probe": probed, "crowd": stats, "actions": actions,
                     "actions_per_second": round(actions / stats["window"]["seconds"], 1),
                     "valkey_cpu_us_per_action": round(spent_valkey / actions * 1e6, 1) if actions else 0.0,
                     "valkey_net_us_per_action": round(net / actions * 1e6, 1) if actions else 0.0,
                     "server_cpu_us_per_action": round(spent_site / actions * 1e6, 1) if actions else 0.0,
                     "valkey_cpu_share": round(spent_valkey / stats["window"]["seconds"], 3),
                     "server_cpu_share": round(spent_site / stats["window"]["seconds"], 3),
                     "crowd_cpu_share": round(spent_crowd / stats["window"]["seconds"], 3),
                     "probe_cpu_share": round(spent_own / stats["window"]["seconds"], 3),
                     "machine_cores_busy": busy}
            level["held"] = held(level)
            found.append(level)
            shown = probed["click_to_frame_ms"]
            log(f"  {kind}: {learners} learners, probe p50 {shown['p50']} / p99 {shown['p99']} ms, "
                f"{level['actions_per_second']} actions/s, valkey {level['valkey_net_us_per_action']} µs/action "
                f"net; cores: server {level['server_cpu_share']:.2f}, valkey {level['valkey_cpu_share']:.2f}, crowd "
                f"{level['crowd_cpu_share']:.2f}, whole machine {busy}; own lag max {probed['own_lag_ms']['max']} "
                f"ms; {'held' if level['held'] else 'did not hold'}")
            if learners == profile_at:
                profile = {"learners": learners, **await profiled(served, window)}
            if not level["held"] and not keep_going:
                break
    finally:
        await probe.close()
        await crowd.stop()
        await valkey.aclose()
    first_miss = next((i for i, lv in enumerate(found) if not lv["held"]), len(found))
    kept = [lv["learners"] for lv in found[:first_miss]]
    knee = kept[-1] if kept else 0
    return {"kind": kind, "levels": found, "knee": knee, "top": levels[-1],
            "held_every_level": first_miss == len(levels), "profile": profile,
            "valkey_idle_cpu_share": round(idle_rate, 4)}


def cpu_flat(side: dict[str, Any]) -> dict[str, Any] | None:
    """Valkey's CPU per action (net of its idle work) at the lowest level and
    the highest measured: a level that did not hold still prices its actions
    (the CPU an action costs does not depend on the probe's latency)."""
    levels = side["levels"]
    if not levels:
        return None
    low, high = levels[0], levels[-1]
    base = low["valkey_net_us_per_action"]
    return {"low": low["learners"], "high": high["learners"], "low_us": base,
            "high_us": high["valkey_net_us_per_action"],
            "ratio": round(high["valkey_net_us_per_action"] / base, 2) if base else 0.0}


def run(valkey_url: str, levels: tuple[int, ...] = LEVELS, window: float = 30.0, period: float = PERIOD,
        probe_every: float = PROBE_EVERY, settle: float = 3.0, sides: tuple[str, ...] = ("site", "bare"),
        log: Any = print, profile_at: int | None = TARGET_LEARNERS, keep_going: bool = False,
        workers: int = WORKERS) -> dict[str, Any]:
    """Both sides' climbs, each on a fresh server process of its own; the
    site profiled at `profile_at` learners (None: not profiled)."""
    raise_fd_limit(65536)  # inherited by the servers and the crowd: thousands of streams each
    result: dict[str, Any] = {"levels": list(levels), "window_seconds": window, "period_seconds": period,
                              "probe_every_seconds": probe_every, "p99_limit_ms": P99_LIMIT_MS,
                              "target_learners": TARGET_LEARNERS, "mix": mix.describe(), "workers": workers}
    for kind in sides:
        if kind == "site":
            with servers.serve_site(valkey_url, workers, env={"EMQLAB_STREAM_LIFETIME": STREAM_LIFETIME}) as served:
                result[kind] = asyncio.run(climb(served, kind, valkey_url, levels, window, period, probe_every,
                                                 settle, log, profile_at, keep_going))
                result[kind]["server_errors"] = served.tracebacks()
        else:
            with servers.serve_baseline(valkey_url, workers) as served:
                result[kind] = asyncio.run(climb(served, kind, valkey_url, levels, window, period, probe_every,
                                                 settle, log, None, keep_going))
                result[kind]["server_errors"] = served.tracebacks()
        result[kind]["cpu_flat"] = cpu_flat(result[kind])
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from server.valkey.process import ValkeyProcess

    parser = argparse.ArgumentParser(description="how many learners this machine holds, beside a bare endpoint")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--window", type=float, default=30.0, help="seconds the probe is timed at each level")
    parser.add_argument("--period", type=float, default=PERIOD, help="seconds between one learner's actions")
    parser.add_argument("--side", choices=("site", "bare", "both"), default="both")
    parser.add_argument("--workers", type=int, default=WORKERS, help="uvicorn workers on each side")
    parser.add_argument("--profile-at", type=int, default=TARGET_LEARNERS, help="py-spy the site at this level")
    parser.add_argument("--keep-going", action="store_true", help="climb every level, past one that did not hold")
    args = parser.parse_args(argv)
    sides = ("site", "bare") if args.side == "both" else (args.side,)
    with ValkeyProcess() as valkey:
        result = run(valkey.url, tuple(int(n) for n in args.levels.split(",")), args.window, args.period,
                     sides=sides, profile_at=args.profile_at, keep_going=args.keep_going, workers=args.workers)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
