"""Fan-out: N concurrent SSE streams on one worker, all watching one
sandbox (what a room is: every learner of a class on the instructor's
sandbox), each the stream the dive's page opens (every widget it shows).
One "Complete child" is posted; each client's latency runs from the
moment the POST is sent to the moment that client receives the snapshot
showing the new `:dependencies` (and, separately, its first `effect` event).
The snapshot is read once per change and the same frame handed to every
stream (server/live/streams.py).
Server memory is the uvicorn process's VmRSS from /proc, idle and with every
stream open, and its peak (VmHWM).

Every widget of the page has landed before the streams open (the
instructor's page was there first). The clients run in one asyncio process
on raw sockets (bench/rawhttp.py); on
a small machine they share the CPU with the server, so their own lag is part
of the figure. The baseline is the same measurement with a single stream.

    python -m bench.bench_fanout [--clients 1000] [--actions 12]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from bench import servers
from bench.rawhttp import HttpConn, dependencies_of, raise_fd_limit, sse_stream
from bench.stats import distribution


class Client:
    def __init__(self) -> None:
        self.deps: int | None = None
        self.deps_at = 0.0
        self.effect_at = 0.0
        self.snapshots = 0
        self.down = 0  # status frames saying Valkey is down (a snapshot read that failed)

    def on_event(self, event: str, data: str, at: float) -> None:
        if event == "status" and '"down"' in data:
            self.down += 1
        if event == "widget":
            deps = dependencies_of(data)
            self.snapshots += 1
            if deps is not None and deps != self.deps:
                self.deps, self.deps_at = deps, at
            if 'class="effect"' in data and self.effect_at == 0.0:
                self.effect_at = at  # the first frame whose effects log lists a write


async def open_crowd(site: servers.Served, cookie: str, clients: int, within: float,
                     path: str) -> tuple[list[Client], list[asyncio.Task[Any]], float]:
    """`clients` streams on the sandbox, once each has its first snapshot (or
    `within` passed: a stream that opened without it is counted, and gets the
    next change's like every other); and how long that took."""
    crowd = [Client() for _ in range(clients)]
    tasks: list[asyncio.Task[Any]] = []
    opened_at = time.perf_counter()
    for index, client in enumerate(crowd):
        tasks.append(asyncio.create_task(sse_stream(site.host, site.port, path, cookie, client.on_event)))
        if index % 100 == 99:
            await asyncio.sleep(0.05)  # a class arriving, not a SYN flood
    deadline = time.perf_counter() + within
    while any(c.deps != 3 for c in crowd):
        failed = [t for t in tasks if t.done()]
        if failed:
            raise RuntimeError(f"{len(failed)} streams ended early: {failed[0].exception()!r}")
        if time.perf_counter() > deadline:
            break
        await asyncio.sleep(0.05)
    return crowd, tasks, time.perf_counter() - opened_at


async def measure(site: servers.Served, clients: int, actions: int, within: float = 60.0,
                  path: str = "") -> dict[str, Any]:
    """`clients` streams of `path` (the dive page's stream when empty) on one sandbox."""
    path = path or servers.page_stream(site.url)
    raise_fd_limit(clients * 2 + 256)
    cookie = servers.new_cookie(site.url)
    actor = HttpConn(site.host, site.port, cookie)
    # the instructor's page opened first: every widget of the page has landed
    # before the class arrives (a thousand first showings of a widget at once
    # queue on its lock: see bench_learners' notes and the lead's report)
    for widget in servers.page_widgets(site.url):
        status, _ = await actor.request("GET", f"/api/widgets/{widget}/state")
        if status != 200:
            raise RuntimeError(f"{widget}'s state answered {status}")
    await act(actor, "reset")
    rss_idle = site.rss_mb()
    crowd, tasks, connect_seconds = await open_crowd(site, cookie, clients, within, path)
    without_first = sum(c.deps != 3 for c in crowd)
    said_down = sum(c.down > 0 for c in crowd)
    await asyncio.sleep(0.5)
    rss_streams = site.rss_mb()
    to_snapshot: list[float] = []
    to_effect: list[float] = []
    per_action: list[dict[str, float]] = []
    expected = 3
    done_actions = 0
    while done_actions < actions:
        if expected == 0:
            await act(actor, "reset")
            expected = 3
            await wait_for(crowd, 3, deadline=time.perf_counter() + within)
            await asyncio.sleep(0.2)
            continue
        for client in crowd:
            client.effect_at = 0.0
        sent = time.perf_counter()
        await act(actor, "complete-child")
        expected -= 1
        await wait_for(crowd, expected, deadline=time.perf_counter() + within)
        got = [c.deps_at - sent for c in crowd]
        to_snapshot += got
        to_effect += [c.effect_at - sent for c in crowd if c.effect_at]
        shown = distribution(got, 1000)
        per_action.append({"p50_ms": shown["p50"], "p99_ms": shown["p99"]})
        done_actions += 1
        await asyncio.sleep(0.3)
    rss_after = site.rss_mb()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await actor.close()
    return {
        "clients": clients,
        "stream": path,
        "actions": done_actions,
        "connect_seconds": round(connect_seconds, 2),
        "without_first_snapshot": without_first,
        "said_valkey_down": said_down,
        "to_snapshot_ms": distribution(to_snapshot, 1000),
        "to_first_effect_ms": distribution(to_effect, 1000),
        "per_action": per_action,
        "rss_mb": {"idle": rss_idle, "streams_open": rss_streams, "after_broadcasts": rss_after, "peak": site.hwm_mb()},
    }


async def act(actor: HttpConn, action: str) -> None:
    status, body = await actor.post(f"/api/widgets/fanin/{action}")
    if status != 200:
        raise RuntimeError(f"{action} answered {status}: {body[:300]!r}")


async def wait_for(crowd: list[Client], deps: int, deadline: float) -> None:
    while any(c.deps != deps for c in crowd):
        if time.perf_counter() > deadline:
            behind = sum(c.deps != deps for c in crowd)
            raise RuntimeError(f"{behind} of {len(crowd)} streams never showed :dependencies = {deps}")
        await asyncio.sleep(0.002)


def run(site: servers.Served, clients: int = 1000, actions: int = 12, stream: str = "") -> dict[str, Any]:
    """The figure (``clients`` streams) beside its baseline (one stream), same
    site, same run; `stream`: the path each opens (the dive page's by default)."""
    single = asyncio.run(measure(site, 1, actions, path=stream))
    crowd = asyncio.run(measure(site, clients, actions, path=stream))
    base, many = single["to_snapshot_ms"]["p99"], crowd["to_snapshot_ms"]["p99"]
    return {"baseline_one_stream": single, "many_streams": crowd,
            "ratio_p99": round(many / base, 1) if base else 0.0}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="fan-out: N SSE streams on one worker")
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--actions", type=int, default=12)
    parser.add_argument("--stream", default="", help="the stream each client opens (default: the dive page's)")
    args = parser.parse_args(argv)
    from server.valkey.process import ValkeyProcess

    with ValkeyProcess() as valkey, servers.serve_site(valkey.url) as site:
        result = run(site, args.clients, args.actions, args.stream)
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
