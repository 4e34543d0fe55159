"""The probe learner of bench_learners.py and bench_fairness.py: one learner
whose every click is timed, to its answer and to its frame.

It has its own sandbox (a cookie from a first visit to the dive) and its
page's stream open, and acts every `every` seconds on one keep-alive
connection (a browser clicking away keeps its connection), walking the
fan-in's tour (bench/mix.py); the bare probe POSTs `/act/<learner>` of
bench/baseline_app.py and reads `/stream/<learner>`. A click's frame is the
first snapshot of the widget on the stream with a `ver` at least the
answer's (it may come before the answer). Beside the clicks, a watch of this
process's own loop: how late its 10 ms sleeps wake, the machine's noise as
the probe meets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from bench import mix, servers
from bench.rawhttp import HttpConn, sse_stream, ver_of, widget_of
from bench.stats import distribution

LAG_EVERY = 0.01  # seconds the lag watch sleeps between looks
FRAME_WITHIN = 5.0  # a probe frame later than this counts as never come


class Probe:
    """One learner whose every click is timed to its frame."""

    def __init__(self, served: servers.Served, kind: str, stream: str) -> None:
        self.host, self.port, self.kind = served.host, served.port, kind
        self.learner = "probe" + str(int(time.time() * 1000) % 100000)
        self.cookie = servers.new_cookie(served.url) if kind == "site" else ""
        self.stream = stream if kind == "site" else f"/stream/{self.learner}"
        self.step = 1  # the scenario lands with the stream: the walk goes on after its Reset
        self.frames: list[tuple[int, float]] = []
        self.news = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def on_event(self, event: str, data: str, at: float) -> None:
        if self.kind == "bare" and event == "value":
            ver = int(data)
        elif self.kind == "site" and event == "widget" and widget_of(data) == mix.WIDGET:
            ver = ver_of(data) or 0
        else:
            return
        self.frames.append((ver, at))
        self.news.set()

    async def open(self) -> None:
        self.task = asyncio.create_task(sse_stream(self.host, self.port, self.stream, self.cookie, self.on_event))
        deadline = time.perf_counter() + 60
        while not self.frames:
            if self.task.done():
                raise RuntimeError(f"the probe's stream ended: {self.task.exception()!r}")
            if time.perf_counter() > deadline:
                raise RuntimeError("the probe's stream brought no frame within 60 s")
            self.news.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.news.wait(), 1)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    def path(self) -> str:
        if self.kind == "site":
            return f"/api/widgets/{mix.WIDGET}/{mix.WALK[self.step % len(mix.WALK)]}"
        return f"/act/{self.learner}"

    async def frame_for(self, ver: int, sent: float) -> float | None:
        """When the first frame at `ver` or later came (None: not within FRAME_WITHIN)."""
        deadline = sent + FRAME_WITHIN
        while True:
            hit = next((at for v, at in self.frames if v >= ver), None)
            if hit is not None:
                return hit
            left = deadline - time.perf_counter()
            if left <= 0:
                return None
            self.news.clear()
            try:
                await asyncio.wait_for(self.news.wait(), left)
            except TimeoutError:
                return None

    async def measure(self, seconds: float, every: float) -> dict[str, Any]:
        lags: list[float] = []
        watch = asyncio.create_task(lag_watch(lags))
        try:
            found = await self.timed(seconds, every)
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        return {**found, "own_lag_ms": distribution(lags, 1000)}

    async def timed(self, seconds: float, every: float) -> dict[str, Any]:
        conn = HttpConn(self.host, self.port, self.cookie or None)
        latencies: list[float] = []
        answers: list[float] = []
        failures: dict[str, int] = {"non_2xx": 0, "errors": 0, "frames_missing": 0}
        statuses: dict[str, int] = {}
        stop_at = time.perf_counter() + seconds
        actions = 0
        try:
            while time.perf_counter() < stop_at:
                self.frames = []
                sent = time.perf_counter()
                try:
                    status, body = await conn.post(self.path())
                except (OSError, asyncio.IncompleteReadError):
                    failures["errors"] += 1
                    await conn.close()
                    conn = HttpConn(self.host, self.port, self.cookie or None)
                    continue
                answers.append(time.perf_counter() - sent)
                statuses[str(status)] = statuses.get(str(status), 0) + 1
                actions += 1
                self.step += 1
                if status != 200:
                    failures["non_2xx"] += 1
                else:
                    at = await self.frame_for(int(json.loads(body)["ver"]), sent)
                    if at is None:
                        failures["frames_missing"] += 1
                        latencies.append(FRAME_WITHIN)
                    else:
                        latencies.append(max(0.0, at - sent))
                await asyncio.sleep(max(0.0, sent + every - time.perf_counter()))
        finally:
            await conn.close()
        return {"click_to_frame_ms": distribution(latencies, 1000), "answer_ms": distribution(answers, 1000),
                "actions": actions, "statuses": statuses, **failures,
                "raw": {"answer_s": answers, "frame_s": latencies}}  # for a caller that joins windows


async def lag_watch(lags: list[float]) -> None:
    """How late this process's own sleeps wake: the machine's noise as the
    probe itself meets it (other work on these CPUs), told apart from the
    server's lateness."""
    while True:
        started = time.perf_counter()
        await asyncio.sleep(LAG_EVERY)
        lags.append(max(0.0, time.perf_counter() - started - LAG_EVERY))
