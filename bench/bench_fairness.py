"""Fairness (issue 28's row): another learner's actions while one learner
floods, beside the same learner's actions unflooded, in the same run.

The site runs with its default rate limits (the defence is what is
measured): a fresh site process, `serve_site(limits=True)`. Two learners,
each with the dive's page stream open:

* the measured learner acts every 0.2 s (5 a second, within its budget of
  actions), walking the fan-in's tour (bench/mix.py) in its own sandbox, as
  bench_learners' probe does: each action's answer time (POST to answer)
  and its click to frame (POST to the stream's snapshot of it);
* the flooder (bench/flood.py, a process of its own) sends 200 state reads
  a second over six keep-alive connections and 50 console writes a second
  (an HSET on its own parent row), from the same address.

Timed unflooded for half the window, flooded for the window, unflooded for
half the window again: the unflooded figures are both halves together, so
a drift of the machine weighs on both sides alike. The flooder's answers
are reported by status (the site turns most of them away with 429 before
they reach Valkey). The target (issue 28): the flood moves the other
learner's action p50 by at most 2x.

    python -m bench.bench_fairness [--window 20] [--reads 200] [--writes 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import time
from typing import Any

from bench import servers
from bench.probe import Probe
from bench.stats import distribution

TARGET_RATIO = 2.0  # flooded p50 / unflooded p50 of the other learner's actions
EVERY = 0.2  # seconds between the measured learner's actions


class Flood:
    """bench/flood.py running from `with` to its end; `result` afterwards."""

    def __init__(self, url: str, cookie: str, reads: float, writes: float, stream: str) -> None:
        self.command = [sys.executable, "-m", "bench.flood", url, cookie, "--reads", str(reads),
                        "--writes", str(writes), "--stream", stream]
        self.proc: subprocess.Popen[str] | None = None
        self.result: dict[str, Any] = {}

    def __enter__(self) -> Flood:
        self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True, cwd=str(servers.ROOT),
                                     env=servers.child_env())
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "READY":
            self.proc.kill()
            raise RuntimeError(f"the flood did not start: {line!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        for line in out.splitlines():
            if line.startswith("RESULT "):
                self.result = json.loads(line[len("RESULT "):])


def joined(*windows: dict[str, Any]) -> dict[str, Any]:
    """Several windows of the probe as one."""
    answers = [x for w in windows for x in w["raw"]["answer_s"]]
    frames = [x for w in windows for x in w["raw"]["frame_s"]]
    statuses: dict[str, int] = {}
    for w in windows:
        for code, n in w["statuses"].items():
            statuses[code] = statuses.get(code, 0) + n
    return {"answer_ms": distribution(answers, 1000), "click_to_frame_ms": distribution(frames, 1000),
            "actions": sum(w["actions"] for w in windows), "statuses": statuses,
            **{k: sum(w[k] for w in windows) for k in ("non_2xx", "errors", "frames_missing")}}


async def measure(site: servers.Served, window: float, every: float, reads: float, writes: float
                  ) -> dict[str, Any]:
    stream = servers.page_stream(site.url)
    probe = Probe(site, "site", stream)
    flooder = servers.new_cookie(site.url)
    await probe.open()
    try:
        await probe.measure(1.0, every)  # warm: connections open, the walk under way
        before = await probe.measure(window / 2, every)
        with Flood(site.url, flooder, reads, writes, stream) as flood:
            await asyncio.sleep(1.0)  # the flood at its pace before the window opens
            flooded = await probe.measure(window, every)
        after = await probe.measure(window / 2, every)
    finally:
        await probe.close()
    quiet, loud = joined(before, after), joined(flooded)
    q50, l50 = quiet["answer_ms"]["p50"], loud["answer_ms"]["p50"]
    return {"window_seconds": window, "every_seconds": every, "unflooded": quiet, "flooded": loud,
            "flood": flood.result, "ratio_p50": round(l50 / q50, 2) if q50 else 0.0,
            "ratio_p99": round(loud["answer_ms"]["p99"] / quiet["answer_ms"]["p99"], 2)
            if quiet["answer_ms"]["p99"] else 0.0,
            "target_ratio": TARGET_RATIO}


def run(valkey_url: str, window: float = 20.0, every: float = EVERY, reads: float = 200.0,
        writes: float = 50.0) -> dict[str, Any]:
    """On a fresh site process with its default rate limits."""
    with servers.serve_site(valkey_url, limits=True) as site:
        started = time.monotonic()
        result = asyncio.run(measure(site, window, every, reads, writes))
        result["seconds"] = round(time.monotonic() - started, 1)
        result["site_errors"] = site.tracebacks()
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from server.valkey.process import ValkeyProcess

    parser = argparse.ArgumentParser(description="another learner's actions while one learner floods")
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--reads", type=float, default=200.0, help="state reads a second")
    parser.add_argument("--writes", type=float, default=50.0, help="console writes a second")
    args = parser.parse_args(argv)
    with ValkeyProcess() as valkey:
        result = run(valkey.url, args.window, EVERY, args.reads, args.writes)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
