"""Fairness: another learner's actions while one learner floods, beside the
same learner's actions unflooded, in the same run.

The site runs with its default rate limits (the defence is what is
measured). The measured learner (bench/probe.py) acts every 0.2 s, walking
the fan-in's tour in its own sandbox: each action's answer time and its
click to frame. The flooder is wrk, from one sandbox with its page's stream
open: 200 state reads a second over six keep-alive connections (a browser's
six per host) and 50 console writes a second (an HSET on its own parent
row) over one; every answer is counted by status (the site turns most of a
flood away with 429). Timed unflooded for half the window, flooded for the
window, unflooded for half again (both halves together are the unflooded
figure, so a drift of the machine weighs on both sides). Target: the flood
moves the other learner's action p50 by at most 2x.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import servers
from bench.probe import Probe
from bench.stats import distribution, ratio
from bench.wrkrun import Wrk

TARGET_RATIO = 2.0
EVERY = 0.2  # seconds between the measured learner's actions
WRITE = '{"command": "HSET emq:{fanin}:job:JOBparent note flood"}'


def joined(*windows: dict[str, Any]) -> dict[str, Any]:
    """Several windows of the probe as one."""
    statuses: dict[str, int] = {}
    for w in windows:
        for code, n in w["statuses"].items():
            statuses[code] = statuses.get(code, 0) + n
    return {"answer_ms": distribution([x for w in windows for x in w["raw"]["answer_s"]], 1000),
            "click_to_frame_ms": distribution([x for w in windows for x in w["raw"]["frame_s"]], 1000),
            "actions": sum(w["actions"] for w in windows), "statuses": statuses,
            **{k: sum(w[k] for w in windows) for k in ("non_2xx", "errors", "frames_missing")}}


async def measure(site: servers.Served, window: float, reads: float, writes: float) -> dict[str, Any]:
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
    quiet, loud = joined(before, after), joined(flooded)
    flood = {name: {"rate": w.result["rps"], "target_rate": rate, "statuses": w.result["status_codes"]}
             for name, w, rate in (("reads", read, reads), ("writes", write, writes))}
    return {"window_seconds": window, "every_seconds": EVERY, "unflooded": quiet, "flooded": loud, "flood": flood,
            "target_ratio": TARGET_RATIO,
            **{f"ratio_{p}": ratio(loud["answer_ms"][p], quiet["answer_ms"][p], 2) for p in ("p50", "p99")}}


def run(valkey_url: str, window: float = 20.0, reads: float = 200.0, writes: float = 50.0) -> dict[str, Any]:
    """On a fresh site process with its default rate limits."""
    with servers.serve_site(valkey_url, limits=True) as site:
        started = time.monotonic()
        result = asyncio.run(measure(site, window, reads, writes))
        result["seconds"] = round(time.monotonic() - started, 1)
        result["site_errors"] = site.tracebacks()
    return result
