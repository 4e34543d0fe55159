"""A small asyncio HTTP/1.1 client for the benchmarks: keep-alive requests and
Server-Sent Event streams over plain asyncio streams.

httpx costs more CPU per request than the server under test on a 2-core
machine, so the load generators and the fan-out clients use this instead: one
connection per client, bytes in, bytes out, no pool, no retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import resource
import time
from collections.abc import Callable

from server.sandboxes.sandbox import COOKIE


def raise_fd_limit(wanted: int = 16384) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, wanted), hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


class HttpConn:
    """One keep-alive connection; ``request`` sends and reads one exchange."""

    def __init__(self, host: str, port: int, cookie: str | None = None) -> None:
        self.host, self.port, self.cookie = host, port, cookie
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> HttpConn:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
        return self

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self.writer.wait_closed()
            self.writer = None

    def head(self, method: str, path: str, body: bytes, extra: dict[str, str] | None = None) -> bytes:
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        if self.cookie:
            lines.append(f"Cookie: {COOKIE}={self.cookie}")
        if body or method == "POST":
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        for key, value in (extra or {}).items():
            lines.append(f"{key}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        reused = self.writer is not None
        if self.writer is None:
            await self.open()
        assert self.reader is not None and self.writer is not None
        self.writer.write(self.head(method, path, body))
        try:
            status, headers = await read_head(self.reader)
        except (asyncio.IncompleteReadError, ConnectionError):
            if not reused:
                raise
            # the server closed an idle keep-alive connection: once more, on a new one
            await self.close()
            return await self.request(method, path, body)
        if headers.get("transfer-encoding") == "chunked":
            chunks = []
            while (chunk := await read_chunk(self.reader)) is not None:
                chunks.append(chunk)
            data = b"".join(chunks)
        else:
            data = await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection") == "close":
            await self.close()
        return status, data

    async def post(self, path: str, body: bytes = b"{}") -> tuple[int, bytes]:
        return await self.request("POST", path, body)


async def one_shot(host: str, port: int, method: str, path: str, cookie: str | None = None,
                   body: bytes = b"") -> tuple[int, bytes]:
    """One exchange on a connection of its own, closed after it (`Connection:
    close`): what a browser does when its page acts more seldom than the
    server keeps an idle connection (uvicorn: 5 s)."""
    conn = HttpConn(host, port, cookie)
    await conn.open()
    assert conn.reader is not None and conn.writer is not None
    try:
        conn.writer.write(conn.head(method, path, body, {"Connection": "close"}))
        status, headers = await read_head(conn.reader)
        if headers.get("transfer-encoding") == "chunked":
            chunks = []
            while (chunk := await read_chunk(conn.reader)) is not None:
                chunks.append(chunk)
            return status, b"".join(chunks)
        return status, await conn.reader.readexactly(int(headers.get("content-length", "0")))
    finally:
        await conn.close()


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
    return status, headers


async def read_chunk(reader: asyncio.StreamReader) -> bytes | None:
    size_line = await reader.readuntil(b"\r\n")
    size = int(size_line.split(b";")[0].strip(), 16)
    if size == 0:
        await reader.readuntil(b"\r\n")
        return None
    data = await reader.readexactly(size + 2)
    return data[:-2]


Handler = Callable[[str, str, float], None]


async def sse_stream(host: str, port: int, path: str, cookie: str, on_event: Handler,
                     opened: asyncio.Event | None = None) -> None:
    """Read one SSE stream until it ends; ``on_event(event, data, perf_counter())`` per event."""
    conn = HttpConn(host, port, cookie)
    await conn.open()
    assert conn.reader is not None and conn.writer is not None
    try:
        conn.writer.write(conn.head("GET", path, b"", {"Accept": "text/event-stream"}))
        status, headers = await read_head(conn.reader)
        if status != 200:
            raise RuntimeError(f"stream answered {status}")
        if opened is not None:
            opened.set()
        chunked = headers.get("transfer-encoding") == "chunked"
        buffer = b""
        while True:
            if chunked:
                chunk = await read_chunk(conn.reader)
            else:
                chunk = await conn.reader.read(65536) or None
            if chunk is None:
                return
            now = time.perf_counter()
            buffer += chunk.replace(b"\r\n", b"\n")
            while b"\n\n" in buffer:
                block, buffer = buffer.split(b"\n\n", 1)
                event, data = "message", []
                for line in block.decode("utf-8", "replace").split("\n"):
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])
                if data or event != "message":
                    on_event(event, "\n".join(data), now)
    finally:
        await conn.close()


def widget_of(data: str) -> str | None:
    """The widget a `widget` frame draws (its section's `data-widget`)."""
    found = re.search(r'data-widget="([^"]+)"', data[:400])
    return found.group(1) if found else None


def ver_of(data: str) -> int | None:
    found = re.search(r'<section [^>]*data-ver="(\d+)"', data[:600])
    return int(found.group(1)) if found else None


def dependencies_of(data: str) -> int | None:
    """`:dependencies` in a fan-in `widget` frame (None when it is not one:
    a page's stream brings the drawings of every widget it shows)."""
    if widget_of(data) != "fanin":
        return None
    found = re.search(r'data-role="dependencies">(\d+)<', data)
    return int(found.group(1)) if found else None
