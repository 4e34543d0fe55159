"""Background load: N sandboxes acting together at a fixed aggregate rate,
each with its live stream open the way its page would have it.

    python -m bench.load URL COOKIE_FILE --rate R [--stream PATH] [--no-streams] [--seconds S]

Each sandbox walks the fan-in's tour (bench/mix.py) on its own keep-alive
connection, at ``rate / N`` actions per second, spread
evenly; a sandbox never has two actions in flight, and a late action is not
made up for (the schedule slips instead), so the rate is an upper bound and
the achieved rate is reported. ``--rate 0`` only holds the streams open.
Runs until SIGTERM (or ``--seconds``) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from bench import mix
from bench.rawhttp import HttpConn, raise_fd_limit, sse_stream

STREAM_PATH = "/api/stream?widgets=fanin"  # the default; a page's stream names every widget it shows


async def watch(host: str, port: int, cookie: str, counts: dict[str, int], opened: asyncio.Event,
                path: str = STREAM_PATH) -> None:
    """One sandbox's live stream; `opened` once its first snapshot arrived (its
    landing and first read are done, so the measured window leaves them out)."""
    def on_event(event: str, data: str, at: float) -> None:
        counts["events"] += 1
        if event == "widget":
            opened.set()

    try:
        await sse_stream(host, port, path, cookie, on_event)
    except (OSError, asyncio.IncompleteReadError, RuntimeError):
        counts["errors"] += 1
        opened.set()


async def act(host: str, port: int, cookie: str, counts: dict[str, int], first_at: float, period: float,
              stop: asyncio.Event) -> None:
    """One sandbox's actions on its own keep-alive connection, one every `period` s from `first_at`."""
    conn = HttpConn(host, port, cookie)
    next_at, step = first_at, 0
    try:
        while not stop.is_set():
            delay = next_at - time.perf_counter()
            if delay > 0:
                try:
                    await asyncio.wait_for(stop.wait(), delay)
                    break
                except TimeoutError:
                    pass
            action = mix.WALK[step % len(mix.WALK)]
            step += 1
            status, _ = await conn.post(f"/api/widgets/{mix.WIDGET}/{action}")
            counts["actions"] += 1
            if not 200 <= status < 300:
                counts["non_2xx"] += 1
            next_at = max(next_at + period, time.perf_counter())  # late: the schedule slips, never catches up
    except (OSError, asyncio.IncompleteReadError):
        counts["errors"] += 1
    finally:
        await conn.close()


async def generate(url: str, cookies: list[str], rate: float, seconds: float | None = None,
                   streams: bool = True, stop: asyncio.Event | None = None,
                   ready: asyncio.Event | None = None, stream_path: str = STREAM_PATH) -> dict[str, Any]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", int(parts.port or 80)
    stop = stop or asyncio.Event()
    counts = {"actions": 0, "non_2xx": 0, "events": 0, "errors": 0}
    n = len(cookies)
    tasks: list[asyncio.Task[Any]] = []
    if streams:
        opened = [asyncio.Event() for _ in cookies]
        tasks += [asyncio.create_task(watch(host, port, c, counts, e, stream_path)) for c, e in zip(cookies, opened)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in opened)), 60)
    if ready is not None:
        ready.set()
    began = time.perf_counter()
    if rate > 0:
        tasks += [asyncio.create_task(act(host, port, c, counts, began + i / rate, n / rate, stop))
                  for i, c in enumerate(cookies)]
    if seconds is not None:
        try:
            await asyncio.wait_for(stop.wait(), seconds)
        except TimeoutError:
            stop.set()
    else:
        await stop.wait()
    elapsed = time.perf_counter() - began
    await asyncio.sleep(0.05)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "sandboxes": n,
        "target_rate": round(rate, 1),
        "achieved_rate": round(counts["actions"] / elapsed, 1) if elapsed > 0 else 0.0,
        "seconds": round(elapsed, 2),
        "streams": n if streams else 0,
        **counts,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="background load for the benchmarks")
    parser.add_argument("url")
    parser.add_argument("cookie_file")
    parser.add_argument("--rate", type=float, required=True)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--no-streams", action="store_true")
    parser.add_argument("--stream", default=STREAM_PATH, help="the stream each sandbox's page opens")
    args = parser.parse_args(argv)
    raise_fd_limit()
    with open(args.cookie_file) as handle:
        cookies = [line.strip() for line in handle if line.strip()]

    async def amain() -> dict[str, Any]:
        stop = asyncio.Event()
        ready = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)

        async def announce() -> None:
            await ready.wait()
            print("READY", flush=True)

        announcer = asyncio.create_task(announce())
        result = await generate(args.url, cookies, args.rate, args.seconds, not args.no_streams, stop, ready,
                                args.stream)
        announcer.cancel()
        return result

    print("RESULT " + json.dumps(asyncio.run(amain())), flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
