"""Reset with 5,000 idle sandboxes present vs none: the ratio.

One learner's sandbox is landed through the site (every widget). Two resets
are timed, first with no other sandbox, then with `crowd` idle ones: `emqlab
reset --sandbox` (`resets.reset_sandboxes`, in this process) and the fan-in's
own Reset through the site. The crowd is one landed sandbox's keys copied
(DUMP / RESTORE) under new ids, each entered in the registry and the held
index idle for ten minutes, as admission enters it; removed afterwards.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

import redis

from bench import servers
from bench.bench_footprint import sandbox_keys
from bench.stats import percentile
from server.lifecycle import resets
from server.sandboxes.admission import HELD_KEY
from server.sandboxes.keys import REGISTRY_KEY
from server.valkey.client import open_client
from server.widgets import WIDGETS, runner
from server.widgets.snapshot import Catalog

TARGET = 1.5  # the bound on crowded / alone
BATCH = 1000  # RESTOREs per pipeline while landing the crowd
WARM_UP = 5  # untimed resets of each kind before each run's samples


def landed_sandbox(site_url: str) -> tuple[str, str]:
    """A first visit whose every widget landed through the site: (cookie, sandbox id)."""
    cookie = servers.new_cookie(site_url)
    servers.land(site_url, cookie, list(WIDGETS))
    return cookie, servers.sandbox_of(cookie)


def crowd_ids(n: int) -> list[str]:
    return [f"sb{i:09d}" for i in range(n)]  # 11 characters, like a real id


def land_crowd(valkey: redis.Redis, template: str, n: int) -> list[bytes]:
    """`n` idle copies of the template sandbox; the names written, for the cleanup."""
    keys = [(name, dumped) for name in sandbox_keys(valkey, template) if (dumped := valkey.dump(name)) is not None]
    seen = int((time.time() - 600) * 1000)
    written: list[bytes] = []
    pipe = valkey.pipeline(transaction=False)
    for sandbox in crowd_ids(n):
        for name, dumped in keys:
            written.append(name.replace(template.encode(), sandbox.encode()))
            pipe.restore(written[-1], 0, dumped, replace=True)
        pipe.zadd(REGISTRY_KEY, {sandbox: seen})
        pipe.zadd(HELD_KEY, {sandbox: seen}, nx=True)
        if len(pipe) >= BATCH:
            pipe.execute()
    pipe.execute()
    return written


def remove_crowd(valkey: redis.Redis, written: list[bytes], n: int) -> None:
    pipe = valkey.pipeline(transaction=False)
    for start in range(0, len(written), BATCH):
        pipe.delete(*written[start:start + BATCH])
        pipe.execute()
    ids = crowd_ids(n) if written else []
    for start in range(0, len(ids), BATCH):
        pipe.zrem(REGISTRY_KEY, *ids[start:start + BATCH])
        pipe.zrem(HELD_KEY, *ids[start:start + BATCH])
    pipe.execute()


def widget_reset(site_url: str, cookie: str, samples: int) -> list[float]:
    """The fan-in's Reset through the site, `samples` times (after WARM_UP untimed), in seconds."""
    times = []
    for _ in range(WARM_UP + samples):
        start = time.perf_counter()
        status, body = servers.post(site_url, "/api/widgets/fanin/reset", cookie)
        times.append(time.perf_counter() - start)
        if status != 200:
            raise RuntimeError(f"the fan-in's Reset answered {status}: {body[:200]!r}")
    return times[WARM_UP:]


def emqlab_reset(valkey_url: str, sandbox: str, samples: int) -> list[float]:
    """`resets.reset_sandboxes` of the one sandbox, as `emqlab reset --sandbox` runs it."""
    async def timed() -> list[float]:
        conn = open_client(valkey_url)
        lab = runner.Lab(conn, Catalog(dict(WIDGETS)))
        times = []
        try:
            for _ in range(WARM_UP + samples):
                start = time.perf_counter()
                report = await resets.reset_sandboxes(lab, [sandbox], by="emqlab reset")
                times.append(time.perf_counter() - start)
                if report.failed:
                    raise RuntimeError(f"emqlab reset failed: {report.failed}")
        finally:
            await conn.aclose()
        return times[WARM_UP:]

    return asyncio.run(timed())


def both(site_url: str, valkey_url: str, cookie: str, sandbox: str, samples: int) -> dict[str, list[float]]:
    """Each kind's times (s), `samples` of each."""
    return {"emqlab": emqlab_reset(valkey_url, sandbox, samples), "widget": widget_reset(site_url, cookie, samples)}


def summary(times: list[float]) -> dict[str, float]:
    """p50 and p99 in ms, to a hundredth: a reset takes a few ms, and the figure is their ratio."""
    return {f"p{p}_ms": round(percentile(times, p) * 1000, 2) for p in (50, 99)}


def run(site_url: str, valkey_url: str, quick: bool = False, crowd: int = 5000,
        samples: int | None = None) -> dict[str, Any]:
    """Both resets' p50/p99 with no other sandbox and with `crowd` idle ones, and the ratios."""
    samples = samples or (5 if quick else 30)
    valkey = redis.Redis.from_url(valkey_url)
    written: list[bytes] = []
    try:
        template, _ = landed_sandbox(site_url)
        cookie, learner = landed_sandbox(site_url)
        before = both(site_url, valkey_url, cookie, learner, samples)
        written = land_crowd(valkey, servers.sandbox_of(template), crowd)
        crowded = {k: summary(v) for k, v in both(site_url, valkey_url, cookie, learner, samples).items()}
        remove_crowd(valkey, written, crowd)
        written_count, written = len(written), []
        # "none" is timed before the crowd and again after it, so a drift of
        # the machine (other work on it) weighs on both sides alike
        after = both(site_url, valkey_url, cookie, learner, samples)
        alone = {k: summary(before[k] + after[k]) for k in before}
    finally:
        remove_crowd(valkey, written, crowd)
        valkey.close()
    ratios = {kind: {p: round(crowded[kind][f"{p}_ms"] / max(alone[kind][f"{p}_ms"], 1e-9), 2)
                     for p in ("p50", "p99")} for kind in alone}
    kind = max(ratios, key=lambda k: ratios[k]["p50"])
    return {"ratio": ratios[kind]["p50"], "kind": kind, "target_ratio": TARGET, "crowd": crowd, "samples": samples,
            "with_idle": {p: crowded[kind][f"{p}_ms"] for p in ("p50", "p99")},
            "without": {p: alone[kind][f"{p}_ms"] for p in ("p50", "p99")},
            "keys_per_idle_sandbox": written_count // max(crowd, 1), "alone": alone, "crowded": crowded,
            "ratios": ratios}
