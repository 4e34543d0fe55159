"""How many learners this machine holds (`run`), beside a bare one-EVALSHA endpoint
with a bare SSE stream, in the same run (2 uvicorn workers each side).

A learner has its page's stream open (held by wrk, streams.lua, 250
arriving every 5 s) and acts once every 10 s in its own sandbox, walking the
fan-in's tour (actions.lua: a keep-alive connection per 5 learners, pausing
2 s between requests on average, each pause drawn at random: learners act on
clocks of their own; paced in lockstep, the connections opened together stayed
in step, and every 2 s a burst of a fifth of the crowd met the probe). Levels rise; at each, a period after the last
arrival, the probe (bench/probe.py) acts every 0.1 s for the window and
times each click to its frame. A level holds while the probe's p99 stays
within 100 ms and nothing failed (a crowd non-2xx or socket error, fewer
streams open than learners on the server's port, a probe failure). Each
window's CPU is priced per action: Valkey's (INFO cpu, net of its idle
work) and the server's (/proc). Site streams live an hour here, so streams
opened together do not all reconnect mid-level.

Fairness (`fairness`): another learner's actions while one learner floods,
beside the same learner's actions unflooded, in the same run. The site runs
with its default rate limits (the defence is what is measured). The measured
learner (bench/probe.py) acts every 0.2 s, walking the fan-in's tour in its
own sandbox: each action's answer time and its click to frame. The flooder
is wrk, from one sandbox with its page's stream open: 200 state reads a
second over six keep-alive connections (a browser's six per host) and 50
console writes a second (an HSET on its own parent row) over one; every
answer is counted by status (the site turns most of a flood away with 429).
Timed unflooded for half the window, flooded for the window, unflooded for
half again (both halves together are the unflooded figure, so a drift of the
machine weighs on both sides). Target: the flood moves the other learner's
action p50 by at most 2x.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import redis

from bench import servers
from bench.probe import WALK, WIDGET, Probe, describe, summary
from bench.stats import ratio
from bench.wrkrun import Wrk, raise_fd_limit, socket_errors

LEVELS = (250, 500, 1000, 1500, 2000, 2500, 3000, 4000)
P99_LIMIT_MS = 100.0  # the probe's click-to-frame p99 a level must stay under
TARGET_LEARNERS = 2000  # the site's knee must be above this
CPU_RATIO = 1.5  # Valkey CPU per action, highest level / lowest: "independent" within this
PERIOD = 10.0  # seconds between one learner's actions
PAUSE = 2.0  # seconds an action connection waits between requests: PERIOD / PAUSE learners each
PROBE_EVERY = 0.1  # 300 clicks in a 30 s window, so p99 is not the max
ARRIVING = 250  # learners per wrk stream process, one started every ARRIVING / 50 s
WORKERS = 2
TARGET_RATIO = 2.0  # fairness: the flood moves the other learner's action p50 by at most this
EVERY = 0.2  # fairness: seconds between the measured learner's actions
WRITE = '{"command": "HSET emq:{fanin}:job:JOBparent note flood"}'


def held(level: dict[str, Any]) -> bool:
    probe, crowd = level["probe"], level["crowd"]
    return bool(probe["click_to_frame_ms"]["p99"] <= P99_LIMIT_MS and level["online"] >= level["learners"]
                and probe["non_2xx"] == probe["errors"] == probe["frames_missing"] == 0
                and crowd["non_2xx"] == crowd["errors"] == 0)


def cpu_flat(side: dict[str, Any]) -> dict[str, Any] | None:
    """Valkey's CPU per action at the lowest level and the highest measured."""
    if not side["levels"]:
        return None
    low, high = side["levels"][0], side["levels"][-1]
    base = low["valkey_net_us_per_action"]
    return {"low": low["learners"], "high": high["learners"], "low_us": base,
            "high_us": high["valkey_net_us_per_action"],
            "ratio": ratio(high["valkey_net_us_per_action"], base, 2)}


def established(port: int) -> int:
    """Connections the server holds on its port (server side, ESTABLISHED)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            count += fields[1].endswith(f":{port:04X}") and fields[3] == "01"
    return count


def cpu(valkey: redis.Redis) -> float:
    info = valkey.info("cpu")  # one reading: sys and user of the same moment
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


class Crowd:
    """The learners of one side: their streams (wrk processes, kept) and their actions' lines."""

    def __init__(self, served: servers.Served, kind: str) -> None:
        self.served, self.kind = served, kind
        self.stream = servers.page_stream(served.url) if kind == "site" else ""
        self.cookies: list[str] = []
        self.streams: list[Wrk] = []
        self.files: list[str] = []

    def file(self, lines: list[str]) -> str:
        self.files.append(servers.lines_file(lines))
        return self.files[-1]

    def grow(self, learners: int) -> float:
        started = time.monotonic()
        while len(self.cookies) < learners:
            first = len(self.cookies)
            new = [servers.new_cookie(self.served.url) if self.kind == "site" else f"l{i}"
                   for i in range(first, min(learners, first + ARRIVING))]
            self.cookies += new
            lines = [f"{self.stream} {c}" if self.kind == "site" else f"/stream/{c} -" for c in new]
            self.streams.append(Wrk(self.served.url, "streams.lua", connections=len(new), threads=1,
                                    args=[self.file(lines), "1"], timeout="1s").__enter__())
            time.sleep(max(0.0, started + len(self.streams) * ARRIVING / 50 - time.monotonic()))
        return round(time.monotonic() - started, 2)

    def actions(self, seconds: float) -> Wrk:
        connections = max(1, round(len(self.cookies) * PAUSE / PERIOD))
        # widget "-": the bare learner's own /act/<learner>
        walk = [WIDGET, ",".join(WALK)] if self.kind == "site" else ["-", "act"]
        return Wrk(self.served.url + "/", "actions.lua", seconds, connections, 2,
                   [self.file(self.cookies), "2", *walk, str(int(PAUSE * 1000))])

    def close(self) -> int:
        """Every stream closed, every file removed; the streams' socket errors."""
        for load in self.streams:
            load.__exit__()
        for name in self.files:
            Path(name).unlink(missing_ok=True)
        return sum(socket_errors(load.result, timeouts=False) for load in self.streams)


async def climb(served: servers.Served, kind: str, valkey_url: str, levels: tuple[int, ...], window: float,
                period: float, probe_every: float, log: Any = print) -> dict[str, Any]:
    valkey = redis.Redis.from_url(valkey_url)
    crowd = Crowd(served, kind)
    probe = Probe(served, kind, crowd.stream)
    found: list[dict[str, Any]] = []
    try:
        await probe.open()
        before = cpu(valkey)
        await asyncio.sleep(2.0)
        idle_rate = (cpu(valkey) - before) / 2.0  # Valkey's own work with nobody acting
        for learners in levels:
            arrival = crowd.grow(learners)
            with crowd.actions(period) as warm:
                await asyncio.sleep(period)  # every new learner has acted once before the window
            online = established(served.port) - 1  # the streams open: the probe's is one of them
            with crowd.actions(window) as acting:
                cpu_valkey, cpu_site, began = cpu(valkey), served.cpu_seconds(), time.monotonic()
                probed = summary(await probe.measure(window, probe_every))
                window_actions = acting.finish()
            seconds = time.monotonic() - began
            spent_valkey, spent_site = cpu(valkey) - cpu_valkey, served.cpu_seconds() - cpu_site
            actions = window_actions["requests"] + probed["actions"]
            net = max(0.0, spent_valkey - idle_rate * seconds)
            level = {"learners": learners, "online": online, "arrival_seconds": arrival, "probe": probed,
                     "crowd": {"actions": window_actions["requests"], "answer_ms": window_actions["latency_ms"],
                               "non_2xx": window_actions["non_2xx"] + warm.result["non_2xx"],
                               "errors": socket_errors(window_actions) + socket_errors(warm.result)},
                     "actions_per_second": round(actions / seconds, 1),
                     "valkey_net_us_per_action": round(net / max(actions, 1) * 1e6, 1),
                     "server_cpu_us_per_action": round(spent_site / max(actions, 1) * 1e6, 1),
                     "valkey_cpu_share": round(spent_valkey / seconds, 3),
                     "server_cpu_share": round(spent_site / seconds, 3)}
            level["held"] = held(level)
            found.append(level)
            log(f"  {kind}: {learners} learners ({online} streams), probe p50 {probed['click_to_frame_ms']['p50']}"
                f" / p99 {probed['click_to_frame_ms']['p99']} ms, {level['actions_per_second']} actions/s; "
                f"{'held' if level['held'] else 'did not hold'}")
            if not level["held"]:
                break
    finally:
        await probe.close()
        stream_errors = crowd.close()
        valkey.close()
    first_miss = next((i for i, lv in enumerate(found) if not lv["held"]), len(found))
    return {"kind": kind, "levels": found, "knee": found[first_miss - 1]["learners"] if first_miss else 0,
            "top": levels[-1], "held_every_level": first_miss == len(levels), "stream_errors": stream_errors,
            "valkey_idle_cpu_share": round(idle_rate, 4)}


def run(valkey_url: str, levels: tuple[int, ...] = LEVELS, window: float = 30.0, period: float = PERIOD,
        probe_every: float = PROBE_EVERY, log: Any = print) -> dict[str, Any]:
    """Both sides' climbs, each on a fresh server process of its own."""
    raise_fd_limit()  # inherited by the servers: thousands of streams each
    result: dict[str, Any] = {"levels": list(levels), "window_seconds": window, "period_seconds": period,
                              "probe_every_seconds": probe_every, "p99_limit_ms": P99_LIMIT_MS,
                              "mix": describe(), "workers": WORKERS}
    for kind in ("site", "bare"):
        serve = (servers.serve_site(valkey_url, WORKERS, env={"EMQLAB_STREAM_LIFETIME": "3600"}) if kind == "site"
                 else servers.serve_baseline(valkey_url, WORKERS))
        with serve as served:
            result[kind] = asyncio.run(climb(served, kind, valkey_url, levels, window, period, probe_every, log))
            result[kind]["server_errors"] = served.tracebacks()
        result[kind]["cpu_flat"] = cpu_flat(result[kind])
    return result


async def flood(site: servers.Served, window: float, reads: float, writes: float) -> dict[str, Any]:
    stream = servers.page_stream(site.url)
    probe, flooder = Probe(site, "site", stream), servers.new_cookie(site.url)
    await probe.open()
    try:
        await probe.measure(1.0, EVERY)  # warm: the walk under way
        before = await probe.measure(window / 2, EVERY)
        with Wrk(site.url + stream, "request.lua", connections=1, threads=1, args=[flooder], timeout="1s"), \
                Wrk(site.url + "/api/widgets/fanin/state", "request.lua", connections=6, threads=2,
                    args=[flooder, str(round(6000 / reads))]) as read, \
                Wrk(site.url + "/api/console", "request.lua", connections=1, threads=1,
                    args=[flooder, str(round(1000 / writes)), WRITE]) as write:
            await asyncio.sleep(1.0)  # the flood at its pace before the window opens
            flooded = await probe.measure(window, EVERY)
        after = await probe.measure(window / 2, EVERY)
    finally:
        await probe.close()
    quiet, loud = summary(before, after), summary(flooded)
    flood = {name: {"rate": w.result["rps"], "target_rate": rate, "statuses": w.result["status_codes"]}
             for name, w, rate in (("reads", read, reads), ("writes", write, writes))}
    return {"window_seconds": window, "every_seconds": EVERY, "unflooded": quiet, "flooded": loud, "flood": flood,
            "target_ratio": TARGET_RATIO,
            **{f"ratio_{p}": ratio(loud["answer_ms"][p], quiet["answer_ms"][p], 2) for p in ("p50", "p99")}}


def fairness(valkey_url: str, window: float = 20.0, reads: float = 200.0, writes: float = 50.0) -> dict[str, Any]:
    """On a fresh site process with its default rate limits."""
    with servers.serve_site(valkey_url, limits=True) as site:
        started = time.monotonic()
        result = asyncio.run(flood(site, window, reads, writes))
        result["seconds"] = round(time.monotonic() - started, 1)
        result["site_errors"] = site.tracebacks()
    return result
