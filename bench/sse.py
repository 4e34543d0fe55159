"""The one thing wrk and the browser cannot do for the benchmarks: note the
moment each of many live streams receives a frame (fan-out, the probe
learner). A stream is read from a plain asyncio connection; a probe's
action is one POST on a connection of its own (a browser's idle connection
is gone after uvicorn's 5 s). The load itself is wrk's (bench/wrkrun.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable

from server.sandboxes.sandbox import COOKIE

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
    """`:dependencies` in a fan-in frame (None when it is another widget's)."""
    try:
        snap = json.loads(data)
        if snap.get("widget") != "fanin":
            return None
        found = snap["picture"]["parent"]["dependencies"]
        return None if found is None else int(found)
    except (ValueError, KeyError, TypeError, AttributeError):
        match = DEPENDENCIES.search(data) if 'data-widget="fanin"' in data else None
        return int(match.group(1)) if match else None
