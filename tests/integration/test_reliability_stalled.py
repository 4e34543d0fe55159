"""Stalled readers (issue 13, item 8): 300 streams whose clients never read.

On real uvicorn: raw sockets with a tiny receive buffer send the GET and
never read, so every send soon waits. After the send timeout each connection
must be gone (its socket reset, its buffers freed), the site's RSS back under
150 MB, and the log one line per stream without a traceback.
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


def test_stalled_streams_are_reset_after_the_send_timeout_and_rss_comes_back_under_150_mb(tmp_path: Path) -> None:
    log = tmp_path / "site.log"
    with ValkeyProcess() as valkey, log.open("wb") as sink:
        site = LiveSite(valkey.url, {"EMQLAB_STREAM_SEND_TIMEOUT": "2", "EMQLAB_STREAM_PING": "1"})
        site.start(output=sink)
        assert site.proc is not None
        pid = site.proc.pid
        try:
            client = site.visitor()
            cookie = client.cookies[COOKIE]
            sockets = [stalled_stream(site.port, cookie) for _ in range(STREAMS)]
            peak = rss_mb(pid)
            deadline = time.monotonic() + 150
            # Changes, so every stream has snapshots to send until its small buffers fill.
            while connections_to(site.port) > 1 and time.monotonic() < deadline:
                for action in ("outbox/add-poison", "outbox/add-poison", "outbox/add-poison", "outbox/reset"):
                    client.post(f"/api/widgets/{action}", timeout=60)
                peak = max(peak, rss_mb(pid))
                time.sleep(0.3)
            assert connections_to(site.port) <= 1, "stalled connections are still open"
            time.sleep(1)
            assert rss_mb(pid) < 150, f"RSS {rss_mb(pid):.0f} MB (peak {peak:.0f} MB)"
            assert client.get("/api/widgets/fanin/state", timeout=60).status_code == 200
            for sock in sockets:
                sock.close()
        finally:
            site.stop()
    text = log.read_text()
    assert "Traceback" not in text
    assert text.count("stalled past the 2 s send timeout: connection reset, buffers freed") == STREAMS
    assert "ASGI callable returned without completing response" not in text
