"""A sandbox's keys in Valkey: what each widget's scenario costs and what
expiry leaves (`footprint`), and a reset beside 5,000 idle sandboxes (`run`).

Footprint: Valkey memory per sandbox after each widget's scenario, and
what remains after expiry. For each widget, a fresh sandbox's state read
lands the scenario; every key of the sandbox (found by pattern, so a key the
site's removal would miss still counts) is priced with MEMORY USAGE, again
after each action ran once; baseline: the same keys' DUMP size. Then
`reaper.expire_idle(conn, catalog, 0)`, and what is left (target: 0).

Reset with 5,000 idle sandboxes present vs none, the ratio: one learner's
sandbox is landed through the site (every widget). Two resets are timed, first
with no other sandbox, then with `crowd` idle ones: `emqlab reset --sandbox`
(`resets.reset_sandboxes`, in this process) and the fan-in's own Reset through
the site. The crowd is one landed sandbox's keys copied (DUMP / RESTORE) under
new ids, each entered in the registry and the held index idle for ten minutes,
as admission enters it; removed afterwards.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis
import redis.asyncio as aioredis

from bench import servers
from bench.stats import percentile
from server.lifecycle import reaper, resets
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


def sandbox_keys(client: redis.Redis, sandbox: str) -> list[bytes]:
    """Every key a sandbox holds: its queues' learner keys and every lab key under its id (a scan: bench only)."""
    return [n for p in (f"emq:{{{sandbox}.*", f"lab:{{{sandbox}*") for n in client.scan_iter(match=p, count=1000)]


def price(client: redis.Redis, sandbox: str) -> dict[str, int]:
    names = sandbox_keys(client, sandbox)
    memory = sum(int(client.memory_usage(n, samples=0) or 0) for n in names)
    dumped = sum(len(client.dump(n) or b"") for n in names)
    return {"keys": len(names), "bytes": memory, "dump_bytes": dumped}


def footprint(site_url: str, valkey_url: str) -> dict[str, Any]:
    """Each widget's scenario priced in a fresh sandbox, as it lands and after each action; then expiry."""
    client = redis.Redis.from_url(valkey_url)
    widgets: dict[str, Any] = {}
    try:
        for name, widget in WIDGETS.items():
            cookie = servers.new_cookie(site_url)
            sandbox = servers.sandbox_of(cookie)
            servers.land(site_url, cookie, [name])
            landed = price(client, sandbox)
            # goto replays the tour: its actions are counted here already
            answers = {slug: servers.post(site_url, f"/api/widgets/{name}/{slug}", cookie)[0]
                       for slug in widget.actions if slug not in ("reset", "goto")}
            widgets[name] = {"sandbox": sandbox, "landed": landed, "after_actions": price(client, sandbox),
                             "action_status": answers}
        time.sleep(0.01)
        expired = asyncio.run(expire(valkey_url))
        left = [price(client, w["sandbox"]) for w in widgets.values()]
        still_registered = sum(client.zscore(REGISTRY_KEY, w["sandbox"]) is not None for w in widgets.values())
    finally:
        client.close()
    return {"widgets": widgets, "max_landed_bytes": max(w["landed"]["bytes"] for w in widgets.values()),
            "max_after_actions_bytes": max(w["after_actions"]["bytes"] for w in widgets.values()),
            "expired_sandboxes": len(set(expired) & {w["sandbox"] for w in widgets.values()}),
            "after_expiry": {"keys": sum(v["keys"] for v in left), "bytes": sum(v["bytes"] for v in left),
                             "still_registered": still_registered}}


async def expire(valkey_url: str) -> list[str]:
    """`reaper.expire_idle` with no idle time allowed: every sandbox is past it."""
    conn = aioredis.Redis.from_url(valkey_url, decode_responses=True)
    try:
        return list(await reaper.expire_idle(conn, Catalog(dict(WIDGETS)), 0))
    finally:
        await conn.aclose()


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
