"""Half-open clients (a header line now and then, never the blank line)
cannot take the site down: past uvicorn's concurrency limit, sized from the
descriptor limit, a request gets a 503 at once; past the descriptors
themselves the log stays a few lines (no traceback per connection); and once
they go, pages are served again."""

from __future__ import annotations

import contextlib
import resource
import socket
import time
from pathlib import Path

import httpx

from server.listen import connection_limits
from tests.integration.ops.serving import Serve, wait_for

DESCRIPTORS = 256  # the site's limit here, so a few hundred sockets reach it


def few_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


def half_open(port: int, wait: bool) -> socket.socket:
    sock = socket.socket()
    if wait:
        sock.connect(("127.0.0.1", port))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: flows\r\n")
    else:  # past the backlog the kernel drops the SYN: do not wait for it
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
    return sock


def dribble(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.send(b"X-Slow: 1\r\n")


def status(url: str, timeout: float = 3) -> int | None:
    try:
        return httpx.get(url, timeout=timeout).status_code
    except httpx.HTTPError:
        return None


def test_half_open_clients_past_every_limit_get_503s_a_short_log_and_the_site_back_after(tmp_path: Path) -> None:
    limit, _backlog = connection_limits(DESCRIPTORS)
    site = Serve(tmp_path, "--ephemeral", preexec=few_descriptors)
    sockets: list[socket.socket] = []
    with site:
        try:
            sockets += [half_open(site.port, wait=True) for _ in range(limit)]
            # every one of them accepted and counted: the next request is over the limit
            assert wait_for(lambda: status(site.url + "/") == 503, 10, "a 503 over the concurrency limit") == 1
            sockets += [half_open(site.port, wait=False) for _ in range(DESCRIPTORS)]
            for _ in range(3):  # past the descriptors: accept fails again and again
                dribble(sockets)
                status(site.url + "/", timeout=0.5)
                time.sleep(0.5)
        finally:
            for sock in sockets:
                sock.close()
        assert wait_for(lambda: status(site.url + "/") == 200, 15, "a page served once they closed") == 1
        log = site.log.read_text(errors="replace")
        assert "Traceback" not in log
        assert len(log.splitlines()) <= 20, log[-3000:]
        assert "Too many open files" in log or "Exceeded concurrency limit" in log
    assert site.stop() == 0
