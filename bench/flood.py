"""One learner flooding the site (the fairness figure, bench/bench_fairness.py).

    python -m bench.flood URL COOKIE [--reads 200] [--writes 50] [--connections 6] [--stream PATH]

State reads of the fan-in (`GET /api/widgets/fanin/state`) at `--reads` a
second and console writes (`POST /api/console`, an HSET on the learner's
own parent row) at `--writes` a second, from one sandbox cookie (with its
page's stream open, `--stream`, as the flooding page would have it), over
`--connections` keep-alive connections (a browser's six per host) for the
reads and one for the writes. Each connection waits for its answer before
its next request (a browser does too), and a late request is not made up
for, so the rates are upper bounds; the achieved rates are reported, with
every answer by status (the site turns most of a flood away: 429).

Prints READY once its connections opened, then runs until SIGTERM and
prints one line, RESULT {...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from typing import Any
from urllib.parse import urlsplit

from bench.rawhttp import HttpConn, sse_stream

READ_PATH = "/api/widgets/fanin/state"
WRITE_PATH = "/api/console"


def write_body(n: int) -> bytes:
    return json.dumps({"command": f"HSET emq:{{fanin}}:job:JOBparent note flood-{n}"}).encode()


async def paced(conn: HttpConn, method: str, path: str, rate: float, counts: dict[str, int], stop: asyncio.Event,
                body: Any = None) -> None:
    """Requests on one connection at `rate` a second until `stop`."""
    next_at, n = time.perf_counter(), 0
    while not stop.is_set():
        delay = next_at - time.perf_counter()
        if delay > 0:
            try:
                await asyncio.wait_for(stop.wait(), delay)
                return
            except TimeoutError:
                pass
        try:
            status, _ = await conn.request(method, path, body(n) if body else b"")
            counts[str(status)] = counts.get(str(status), 0) + 1
        except (OSError, asyncio.IncompleteReadError):
            counts["error"] = counts.get("error", 0) + 1
            await conn.close()
        n += 1
        next_at = max(next_at + 1 / rate, time.perf_counter())


async def flood(url: str, cookie: str, reads: float, writes: float, connections: int,
                stream: str = "") -> dict[str, Any]:
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", int(parts.port or 80)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    readers = [await HttpConn(host, port, cookie).open() for _ in range(connections)]
    writer = await HttpConn(host, port, cookie).open()
    read_counts: dict[str, int] = {}
    write_counts: dict[str, int] = {}
    frames = [0]

    def on_event(event: str, data: str, at: float) -> None:
        frames[0] += 1

    page = asyncio.create_task(sse_stream(host, port, stream, cookie, on_event)) if stream else None
    print("READY", flush=True)
    began = time.perf_counter()
    tasks = [asyncio.create_task(paced(c, "GET", READ_PATH, reads / connections, read_counts, stop))
             for c in readers] if reads > 0 else []
    if writes > 0:
        tasks.append(asyncio.create_task(paced(writer, "POST", WRITE_PATH, writes, write_counts, stop, write_body)))
    await stop.wait()
    seconds = time.perf_counter() - began
    await asyncio.gather(*tasks, return_exceptions=True)
    for conn in [*readers, writer]:
        await conn.close()
    if page is not None:
        page.cancel()
        await asyncio.gather(page, return_exceptions=True)
    return {"seconds": round(seconds, 2), "stream_frames": frames[0],
            "reads": {"target_rate": reads, "rate": round(sum(read_counts.values()) / seconds, 1),
                      "statuses": read_counts},
            "writes": {"target_rate": writes, "rate": round(sum(write_counts.values()) / seconds, 1),
                       "statuses": write_counts}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one learner flooding reads and console writes")
    parser.add_argument("url")
    parser.add_argument("cookie")
    parser.add_argument("--reads", type=float, default=200.0)
    parser.add_argument("--writes", type=float, default=50.0)
    parser.add_argument("--connections", type=int, default=6)
    parser.add_argument("--stream", default="", help="the page's stream to keep open")
    args = parser.parse_args(argv)
    result = asyncio.run(flood(args.url, args.cookie, args.reads, args.writes, args.connections, args.stream))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
