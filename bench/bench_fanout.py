"""Fan-out: N concurrent SSE streams on one worker, all on one sandbox (a
class on the instructor's sandbox), each the stream the dive's page opens.
Per "Complete child": from sending the POST to each client receiving the
frame with the new `:dependencies` (and its first `effect`). RSS is the
uvicorn process's VmRSS, idle and with every stream open, and its peak.
Every widget has landed before the streams open. The clients are one
asyncio process (bench/probe.py: wrk cannot note when each stream got a
frame), sharing the CPU with the server. Baseline: the same, one stream.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import probe, servers
from bench.stats import distribution, ratio
from bench.wrkrun import raise_fd_limit


class Client:
    def __init__(self) -> None:
        self.deps: int | None = None
        self.deps_at = 0.0
        self.effect_at = 0.0
        self.down = 0  # status frames saying Valkey is down (a snapshot read that failed)

    def on_event(self, event: str, data: str, at: float) -> None:
        if event == "status" and '"down"' in data:
            self.down += 1
        if event != "effect":
            deps = probe.dependencies_of(data)
            if deps is not None and deps != self.deps:
                self.deps, self.deps_at = deps, at
        elif self.effect_at == 0.0:
            self.effect_at = at


async def act(site: servers.Served, cookie: str, action: str) -> None:
    status, body = await probe.post("127.0.0.1", site.port, f"/api/widgets/fanin/{action}", cookie)
    if status != 200:
        raise RuntimeError(f"{action} answered {status}: {body[:300]!r}")


async def wait_for(crowd: list[Client], deps: int, within: float, tasks: list[asyncio.Task[Any]],
                   poll: float = 0.002) -> bool:
    """Until every stream shows `:dependencies` = `deps`; False when `within` passed first."""
    deadline = time.perf_counter() + within
    while any(c.deps != deps for c in crowd):
        if failed := [t for t in tasks if t.done()]:
            raise RuntimeError(f"{len(failed)} streams ended early: {failed[0].exception()!r}")
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(poll)
    return True


async def measure(site: servers.Served, clients: int, actions: int, within: float = 60.0) -> dict[str, Any]:
    """`clients` streams of the dive page's stream on one sandbox; `actions` broadcasts timed."""
    raise_fd_limit()
    cookie, widgets = servers.new_cookie(site.url), servers.page_widgets(site.url)
    # the instructor's page opened first: every widget of the page has landed
    # before the class arrives (a thousand first showings of a widget at once
    # queue on its lock: see bench_learners' notes and the lead's report)
    servers.land(site.url, cookie, widgets)
    await act(site, cookie, "reset")
    rss_idle = site.rss_mb()
    crowd, tasks, path = [Client() for _ in range(clients)], [], "/api/stream?widgets=" + ",".join(widgets)
    opened_at = time.perf_counter()
    for index, client in enumerate(crowd):
        tasks.append(asyncio.create_task(probe.stream("127.0.0.1", site.port, path, cookie, client.on_event)))
        if index % 100 == 99:
            await asyncio.sleep(0.05)  # a class arriving, not a SYN flood
    # a stream that opened without its first snapshot within `within` is counted, and gets the next change's
    await wait_for(crowd, 3, within, tasks, poll=0.05)
    connect_seconds = time.perf_counter() - opened_at
    without_first, said_down = sum(c.deps != 3 for c in crowd), sum(c.down > 0 for c in crowd)
    await asyncio.sleep(0.5)
    rss_streams = site.rss_mb()
    to_snapshot: list[float] = []
    to_effect: list[float] = []
    expected, done_actions, sent = 3, 0, 0.0
    while done_actions < actions:
        if expected == 0:
            await act(site, cookie, "reset")
            expected = 3
        else:
            for client in crowd:
                client.effect_at = 0.0
            sent = time.perf_counter()
            await act(site, cookie, "complete-child")
            expected -= 1
        if not await wait_for(crowd, expected, within, tasks):
            behind = sum(c.deps != expected for c in crowd)
            raise RuntimeError(f"{behind} of {len(crowd)} streams never showed :dependencies = {expected}")
        if expected == 3:
            await asyncio.sleep(0.2)
            continue
        to_snapshot += [c.deps_at - sent for c in crowd]
        to_effect += [c.effect_at - sent for c in crowd if c.effect_at]
        done_actions += 1
        await asyncio.sleep(0.3)
    rss_after = site.rss_mb()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {"clients": clients, "stream": path, "actions": done_actions, "connect_seconds": round(connect_seconds, 2),
            "without_first_snapshot": without_first, "said_valkey_down": said_down,
            "to_snapshot_ms": distribution(to_snapshot, 1000), "to_first_effect_ms": distribution(to_effect, 1000),
            "rss_mb": {"idle": rss_idle, "streams_open": rss_streams, "after_broadcasts": rss_after,
                       "peak": site.rss_mb("VmHWM")}}


def run(site: servers.Served, clients: int = 1000, actions: int = 12) -> dict[str, Any]:
    """The figure (``clients`` streams) beside its baseline (one stream), same site, same run."""
    single, crowd = (asyncio.run(measure(site, n, actions)) for n in (1, clients))
    base, many = single["to_snapshot_ms"]["p99"], crowd["to_snapshot_ms"]["p99"]
    return {"baseline_one_stream": single, "many_streams": crowd, "ratio_p99": ratio(many, base, 1)}
