"""The learners of bench_learners.py, in a process of their own.

    python -m bench.crowd URL --kind site|bare [--period 10] [--stream PATH] [--arrivals 50]

A learner arrives as a browser would: the site's learner opens the dive
(its sandbox cookie), then the page's live stream (every widget the page
shows, as lab.js opens it: the first open lands their scenarios); the bare
one opens `/stream/<learner>` of bench/baseline_app.py. Then it acts once
every `--period` seconds (its first action at a random moment of its first
period), each on a connection of its own, closed after the answer (a
browser's idle connection is gone after uvicorn's 5 s keep-alive): the
site's learner walks the fan-in's tour (bench/mix.py) in its own sandbox,
the bare one POSTs `/act/<learner>`. A stream that ends (its lifetime) is
opened again after a second, as EventSource does; one that fails counts.

Commands on stdin, one JSON line answered on stdout for each:

    grow N   learners arrive (at most --arrivals a second) until N are
             online; answered once each new one has its stream's first frame
    mark     a new window starts: its counters and answer times from now
    stats    the window so far (and the totals)
    quit

`CrowdProcess` is the other end, for bench_learners: it starts this module
in a process of its own and asks it one line at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.cookies
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bench import mix, servers
from bench.rawhttp import one_shot, raise_fd_limit, sse_stream, widget_of
from bench.stats import distribution
from server.sandboxes.sandbox import COOKIE

RECONNECT_AFTER = 1.0  # seconds, the site's `retry: 1000`
ARRIVAL_WITHIN = 60.0  # seconds a learner may take to arrive before it counts as failed
# A class arriving, not a flood: a learner's arrival (the dive's page, then a
# stream whose first open lands every widget of the page) costs the site some
# ten times an action, so arrivals are paced below what the site can land
ARRIVALS = 50.0


@dataclass
class Window:
    """Counters since a mark."""

    actions: int = 0
    non_2xx: int = 0
    action_errors: int = 0
    stream_failures: int = 0
    stream_ends: int = 0
    frames: int = 0
    answers: list[float] = field(default_factory=list)  # seconds from sending to the answer
    statuses: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    def as_json(self) -> dict[str, Any]:
        seconds = time.perf_counter() - self.started
        return {"actions": self.actions, "non_2xx": self.non_2xx, "action_errors": self.action_errors,
                "stream_failures": self.stream_failures, "stream_ends": self.stream_ends, "frames": self.frames,
                "statuses": self.statuses,
                "seconds": round(seconds, 2), "rate": round(self.actions / seconds, 1) if seconds > 0 else 0.0,
                "answer_ms": distribution(self.answers, 1000)}


class Crowd:
    def __init__(self, url: str, kind: str, period: float, stream: str, arrivals: float) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", int(parts.port or 80)
        self.kind, self.period, self.stream, self.arrivals = kind, period, stream, arrivals
        self.window = Window()
        self.total = Window()
        self.online = 0
        self.arrived = 0
        self.arrival_failures = 0
        self.tasks: list[asyncio.Task[None]] = []
        self.watchers: list[asyncio.Task[None]] = []

    # -- one learner ---------------------------------------------------------------
    async def cookie(self) -> str:
        """A first visit to the dive: the sandbox cookie it sets."""
        reader, writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
        try:
            writer.write(f"GET {servers.DIVE} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nConnection: close\r\n\r\n"
                         .encode())
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            await reader.read()  # the page itself, until the server closes
        finally:
            writer.close()
        status = int(head[0].split()[1])
        jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
        for line in head[1:]:  # every Set-Cookie line: the sandbox's may not be the only one
            name, _, value = line.partition(":")
            if name.strip().lower() == "set-cookie":
                jar.load(value.strip())
        if status != 200 or COOKIE not in jar:
            raise RuntimeError(f"the dive answered {status} without a sandbox cookie")
        return jar[COOKIE].value

    def stream_path(self, learner: str) -> str:
        return self.stream if self.kind == "site" else f"/stream/{learner}"

    def action_path(self, learner: str, step: int) -> str:
        if self.kind == "site":
            return f"/api/widgets/{mix.WIDGET}/{mix.WALK[step % len(mix.WALK)]}"
        return f"/act/{learner}"

    async def watch(self, learner: str, cookie: str | None, opened: asyncio.Event) -> None:
        """The learner's stream, opened again when it ends; `opened` at its first frame."""
        def on_event(event: str, data: str, at: float) -> None:
            self.window.frames += 1
            self.total.frames += 1
            if not opened.is_set() and (event == "value" or (event == "widget" and widget_of(data) == mix.WIDGET)):
                opened.set()

        while True:
            started = time.perf_counter()
            try:
                self.online += 1
                await sse_stream(self.host, self.port, self.stream_path(learner), cookie or "", on_event)
                self.window.stream_ends += 1
                self.total.stream_ends += 1
            except (OSError, asyncio.IncompleteReadError, RuntimeError, ValueError):
                self.window.stream_failures += 1
                self.total.stream_failures += 1
            finally:
                self.online -= 1
            if time.perf_counter() - started < RECONNECT_AFTER:
                await asyncio.sleep(RECONNECT_AFTER)

    async def act(self, learner: str, cookie: str | None, step: int) -> None:
        sent = time.perf_counter()
        try:
            status, _ = await one_shot(self.host, self.port, "POST", self.action_path(learner, step), cookie, b"{}")
        except (OSError, asyncio.IncompleteReadError, ValueError):
            for w in (self.window, self.total):
                w.action_errors += 1
            return
        self.window.answers.append(time.perf_counter() - sent)
        for w in (self.window, self.total):
            w.actions += 1
            w.statuses[str(status)] = w.statuses.get(str(status), 0) + 1
            if not 200 <= status < 300:
                w.non_2xx += 1

    async def learner(self, index: int, arrived: asyncio.Future[bool]) -> None:
        learner = f"l{index:06d}"
        try:
            cookie = await asyncio.wait_for(self.cookie(), ARRIVAL_WITHIN) if self.kind == "site" else None
            opened = asyncio.Event()
            watcher = asyncio.create_task(self.watch(learner, cookie, opened))
            self.watchers.append(watcher)
            await asyncio.wait_for(opened.wait(), ARRIVAL_WITHIN)
        except (OSError, asyncio.IncompleteReadError, RuntimeError, TimeoutError, ValueError):
            self.arrival_failures += 1
            arrived.set_result(False)
            return
        self.arrived += 1
        arrived.set_result(True)
        try:
            step = 1  # the scenario just landed: the walk goes on after its Reset
            next_at = time.perf_counter() + random.uniform(0, self.period)
            while True:
                await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
                await self.act(learner, cookie, step)
                step += 1
                next_at = max(next_at + self.period, time.perf_counter())  # late: slips, never bunches up
        finally:
            watcher.cancel()

    # -- the commands --------------------------------------------------------------
    async def grow(self, to: int) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        waits: list[asyncio.Future[bool]] = []
        start = len(self.tasks)
        began = time.perf_counter()
        for index in range(start, to):
            arrived: asyncio.Future[bool] = loop.create_future()
            waits.append(arrived)
            self.tasks.append(asyncio.create_task(self.learner(index, arrived)))
            await asyncio.sleep(max(0.0, began + (index - start + 1) / self.arrivals - time.perf_counter()))
        done = await asyncio.gather(*waits)
        return {"learners": len(self.tasks), "arrived": sum(done), "failed": len(done) - sum(done),
                "online": self.online, "seconds": round(time.perf_counter() - began, 2)}

    def stats(self) -> dict[str, Any]:
        return {"learners": len(self.tasks), "online": self.online, "arrival_failures": self.arrival_failures,
                "cpu_seconds": round(time.process_time(), 3),
                "window": self.window.as_json(),
                "total": {k: v for k, v in self.total.as_json().items() if k != "answer_ms"}}

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := (await reader.readline()).decode().strip():
            word, _, arg = line.partition(" ")
            if word == "grow":
                answer = await self.grow(int(arg))
            elif word == "mark":
                self.window = Window()
                answer = {"marked": True, "cpu_seconds": round(time.process_time(), 3)}
            elif word == "stats":
                answer = self.stats()
            elif word == "quit":
                break
            else:
                answer = {"error": f"unknown command {word!r}"}
            print(json.dumps(answer), flush=True)
        for task in [*self.tasks, *self.watchers]:
            task.cancel()
        await asyncio.gather(*self.tasks, *self.watchers, return_exceptions=True)


class CrowdProcess:
    """bench/crowd.py in its own process, spoken to line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, url: str, kind: str, period: float, stream: str) -> CrowdProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.crowd", url, "--kind", kind, "--period", str(period), "--stream", stream,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=str(servers.ROOT),
            env=servers.child_env(), limit=1 << 20)
        return cls(proc)

    async def ask(self, command: str, within: float = 600) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command.encode() + b"\n")
        await self.proc.stdin.drain()
        line = await asyncio.wait_for(self.proc.stdout.readline(), within)
        if not line:
            raise RuntimeError(f"the crowd process ended (exit {self.proc.returncode}) on {command!r}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(RuntimeError, TimeoutError, ValueError, OSError):  # it may be gone already
                await self.ask("quit", within=30)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="simulated learners for bench_learners")
    parser.add_argument("url")
    parser.add_argument("--kind", choices=("site", "bare"), required=True)
    parser.add_argument("--period", type=float, default=10.0, help="seconds between one learner's actions")
    parser.add_argument("--stream", default="", help="the site page's stream path (kind site)")
    parser.add_argument("--arrivals", type=float, default=ARRIVALS, help="learners arriving per second at most")
    args = parser.parse_args(argv)
    raise_fd_limit(65536)
    asyncio.run(Crowd(args.url, args.kind, args.period, args.stream, args.arrivals).serve())


if __name__ == "__main__":
    main()
