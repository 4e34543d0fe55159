"""What a learner does (`WALK`), and what wrk and the browser cannot do for the
benchmarks: note the moment each of many live streams receives a frame
(fan-out), and the probe learner (learners, fairness), whose every click is
timed to its answer and to its frame.

A stream is read from a plain asyncio connection; a click is one POST on a
connection of its own (a browser's idle connection is gone after uvicorn's
5 s). The probe has its own sandbox and its page's stream open, and acts
every `every` seconds, walking `WALK`; the bare probe POSTs `/act/<learner>`
of bench/baseline_app.py and reads `/stream/<learner>`. A click's frame is
the first frame of the widget on the stream with a `ver` at least the
answer's (it may come before the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench import servers
from bench.stats import distribution
from server.sandboxes.sandbox import COOKIE
from server.widgets import WIDGETS

# -- what a learner does: Reset, then the actions the fan-in's tour replays, in order, again and again
WIDGET = "fanin"


def walk(widget: str = WIDGET) -> tuple[str, ...]:
    """Reset, then every action the widget's tour replays, in order."""
    slugs = ["reset"]
    for step in WIDGETS[widget].tour:
        for slug, body in step.replay:
            if body:  # the walk is sent as "{}" bodies (wrk, the load generators)
                raise ValueError(f"{widget}'s tour step {step.id} sends a body: {body}")
            slugs.append(slug)
    return tuple(slugs)


WALK = walk()


def describe(actions: tuple[str, ...] = WALK) -> str:
    """The mix in words, for the report: "the fan-in's tour, 2 resets in 14 actions"."""
    resets = actions.count("reset")
    return f"the fan-in's tour walked again and again, {resets} reset{'s' if resets != 1 else ''} in {len(actions)}"


Handler = Callable[[str, str, float], None]  # event, data, perf_counter() when it came
# a frame's version and the fan-in's counter, in a JSON snapshot or an HTML frame
VER = re.compile(r'"ver"\s*:\s*(\d+)|data-ver="(\d+)"')
DEPENDENCIES = re.compile(r'data-role="dependencies"[^>]*>\s*(\d+)\s*<')


def head(method: str, host: str, port: int, path: str, cookie: str, extra: str = "") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", *([f"Cookie: {COOKIE}={cookie}"] if cookie else [])]
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode("latin-1")


async def post(host: str, port: int, path: str, cookie: str, body: bytes = b"{}") -> tuple[int, bytes]:
    """One POST on a connection of its own, closed after the answer: (status, body)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(head("POST", host, port, path, cookie, "Content-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\nConnection: close\r\n") + body)
        status = int((await reader.readline()).split()[1])
        raw = await reader.read()  # to the close: headers, then the body (a chunked one is not read by the probe)
        return status, raw.split(b"\r\n\r\n", 1)[-1]
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def stream(host: str, port: int, path: str, cookie: str, on_event: Handler) -> None:
    """Read one SSE stream until it ends, calling `on_event` for each event."""
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
    try:
        writer.write(head("GET", host, port, path, cookie, "Accept: text/event-stream\r\n"))
        status = int((await reader.readline()).split()[1])
        if status != 200:
            raise RuntimeError(f"{path} answered {status}")
        await reader.readuntil(b"\r\n\r\n")
        event, data = "message", []
        while line := await reader.readline():
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            if text.startswith("event:"):
                event = text[6:].strip()
            elif text.startswith("data:"):
                data.append(text[6:] if text[5:6] == " " else text[5:])
            elif not text and (data or event != "message"):
                on_event(event, "\n".join(data), time.perf_counter())
                event, data = "message", []
            # anything else: a chunk size line of the chunked body, or a comment
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def ver_of(data: str) -> int | None:
    found = VER.search(data)
    return int(found.group(1) or found.group(2)) if found else None


def dependencies_of(data: str) -> int | None:
    """`:dependencies` in a fan-in frame, the HTML the stream sends (None when it is another widget's)."""
    match = DEPENDENCIES.search(data) if 'data-widget="fanin"' in data else None
    return int(match.group(1)) if match else None


FRAME_WITHIN = 5.0  # a frame later than this counts as never come


class Probe:
    def __init__(self, served: servers.Served, kind: str, stream: str) -> None:
        self.host, self.port, self.kind = "127.0.0.1", served.port, kind
        self.learner = "probe" + str(int(time.time() * 1000) % 100000)
        self.cookie = servers.new_cookie(served.url) if kind == "site" else ""
        self.stream = stream if kind == "site" else f"/stream/{self.learner}"
        self.step = 1  # the scenario lands with the stream: the walk goes on after its Reset
        self.frames: list[tuple[int, float]] = []
        self.news = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def on_event(self, event: str, data: str, at: float) -> None:
        if self.kind == "bare":
            ver = int(data) if event == "value" else None
        else:
            ver = ver_of(data) if f'"{WIDGET}"' in data[:200] and event != "effect" else None
        if ver is not None:
            self.frames.append((ver, at))
            self.news.set()

    async def open(self) -> None:
        self.task = asyncio.create_task(stream(self.host, self.port, self.stream, self.cookie, self.on_event))
        deadline = time.perf_counter() + 60
        while not self.frames:
            if self.task.done() or time.perf_counter() > deadline:
                raise RuntimeError(f"no frame on the probe's stream: {self.task.done() and self.task.exception()!r}")
            await self.wait(1.0)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)

    async def wait(self, seconds: float) -> None:
        self.news.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.news.wait(), seconds)

    async def frame_for(self, ver: int, sent: float) -> float | None:
        """When the first frame at `ver` or later came (None: not within FRAME_WITHIN)."""
        while (hit := next((at for v, at in self.frames if v >= ver), None)) is None:
            if time.perf_counter() > sent + FRAME_WITHIN:
                return None
            await self.wait(0.05)
        return hit

    async def measure(self, seconds: float, every: float) -> dict[str, Any]:
        """A window of clicks, one every `every` seconds: its raw samples (`summary` sums windows up)."""
        frames: list[float] = []
        answers: list[float] = []
        failures = {"non_2xx": 0, "errors": 0, "frames_missing": 0}
        statuses: Counter[str] = Counter()
        stop_at = time.perf_counter() + seconds
        while time.perf_counter() < stop_at:
            self.frames = []
            path = (f"/api/widgets/{WIDGET}/{WALK[self.step % len(WALK)]}" if self.kind == "site"
                    else f"/act/{self.learner}")
            sent = time.perf_counter()
            try:
                status, body = await post(self.host, self.port, path, self.cookie)
            except (OSError, ValueError, IndexError):
                failures["errors"] += 1
                await asyncio.sleep(every)
                continue
            answers.append(time.perf_counter() - sent)
            statuses[str(status)] += 1
            self.step += 1
            if status != 200:
                failures["non_2xx"] += 1
            elif (at := await self.frame_for(int(json.loads(body)["ver"]), sent)) is None:
                failures["frames_missing"] += 1
                frames.append(FRAME_WITHIN)
            else:
                frames.append(max(0.0, at - sent))
            await asyncio.sleep(max(0.0, sent + every - time.perf_counter()))
        return {"answer_s": answers, "frame_s": frames, "statuses": statuses, **failures}


def summary(*windows: dict[str, Any]) -> dict[str, Any]:
    """One or more of the probe's windows as one: its answers' and frames' distributions, its failures."""
    statuses: Counter[str] = Counter()
    for w in windows:
        statuses.update(w["statuses"])
    return {"click_to_frame_ms": distribution([x for w in windows for x in w["frame_s"]], 1000),
            "answer_ms": distribution([x for w in windows for x in w["answer_s"]], 1000),
            "actions": sum(len(w["answer_s"]) for w in windows), "statuses": dict(statuses),
            **{k: sum(w[k] for w in windows) for k in ("non_2xx", "errors", "frames_missing")}}
