"""Stalled readers: 300 streams whose clients never read, on real uvicorn.

Raw sockets with a tiny receive buffer send the stream's GET and never read,
so every send soon waits. sse-starlette's `send_timeout`
(EMQLAB_STREAM_SEND_TIMEOUT) ends each such stream; the connection must then
go too, with its buffers, so the site's RSS comes back and its descriptors
are free for others — without a traceback in the log.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

from server.sandboxes.sandbox import COOKIE
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from tests.support import LiveSite

STREAMS = 300
GONE_WITHIN = 20.0  # seconds after the streams stall: a liveness deadline (the send timeout is 2 s)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def connections_to(port: int) -> int:
    """Established TCP connections whose local port is `port` (the site's side)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            count += int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01"
    return count


def stalled_stream(port: int, cookie: str) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.connect(("127.0.0.1", port))
    names = ",".join(WIDGETS)
    sock.sendall(f"GET /api/stream?widgets={names} HTTP/1.1\r\nHost: x\r\nCookie: {COOKIE}={cookie}\r\n\r\n".encode())
    return sock


def test_streams_that_stall_past_the_send_timeout_are_closed_and_rss_comes_back_under_150_mb(tmp_path: Path) -> None:
    log = tmp_path / "site.log"
    with ValkeyProcess() as valkey, log.open("wb") as sink:
        site = LiveSite(valkey.url, {"EMQLAB_STREAM_SEND_TIMEOUT": "2", "EMQLAB_STREAM_PING": "1"})
        site.start(output=sink)
        assert site.proc is not None
        pid = site.proc.pid
        sockets: list[socket.socket] = []
        try:
            client = site.visitor()
            for name in WIDGETS:  # landed once, before 300 pages would all try to land them
                assert client.get(f"/api/widgets/{name}/state").status_code == 200
            sockets = [stalled_stream(site.port, client.cookies[COOKIE]) for _ in range(STREAMS)]
            peak = rss_mb(pid)
            deadline = time.monotonic() + GONE_WITHIN
            # changes, so every stream has snapshots to send until its small buffers fill
            while connections_to(site.port) > 1 and time.monotonic() < deadline:
                for action in ("fanin/complete-child", "native/script", "enqueue-stepper/next", "fanin/reset"):
                    assert client.post(f"/api/widgets/{action}", json={}, timeout=60).status_code == 200
                peak = max(peak, rss_mb(pid))
                time.sleep(0.3)
            left = connections_to(site.port)
            assert left <= 1, f"{left - 1} of {STREAMS} stalled connections still open {GONE_WITHIN:.0f} s on"
            assert rss_mb(pid) < 150, f"RSS {rss_mb(pid):.0f} MB (peak {peak:.0f} MB)"
            assert client.get("/api/widgets/fanin/state", timeout=60).status_code == 200
        finally:
            for sock in sockets:
                sock.close()
            site.stop()
    assert "Traceback" not in log.read_text()
