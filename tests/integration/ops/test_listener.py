"""The site's own listening socket and the bounds handed to uvicorn."""

from __future__ import annotations

import errno
import logging
import socket
from pathlib import Path

from server.listen import Throttle, connection_limits, listening_socket
from tests.integration.ops.serving import Serve, children


def test_a_connection_accepted_through_the_descriptor_uvicorn_is_given_has_tcp_nodelay() -> None:
    listener = listening_socket("127.0.0.1", 0, 16)
    # uvicorn wraps a descriptor it is given as a unix socket, so asyncio never
    # sets TCP_NODELAY itself: the accepted connection must inherit it
    wrapped = socket.fromfd(listener.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket.create_connection(listener.getsockname()) as _client:
            accepted, _address = wrapped.accept()
            with accepted:
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        wrapped.close()
        listener.close()


def test_the_concurrency_limit_leaves_descriptors_for_the_site_and_the_backlog_fits_it() -> None:
    assert connection_limits(20000) == (18000, 2048)
    assert connection_limits(256) == (192, 48)
    for descriptors in (64, 100, 1024, 1 << 20):
        limit, backlog = connection_limits(descriptors)
        assert 16 <= limit <= max(16, descriptors - 64) and 16 <= backlog <= 2048


def test_a_taken_port_stops_serve_before_any_valkey_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        site = Serve(tmp_path)
        site.argv[site.argv.index("--port") + 1] = str(taken.getsockname()[1])
        proc = site.launch()
        assert proc.wait(timeout=30) == 2
        assert not children(proc.pid)
    assert "cannot listen on 127.0.0.1 port" in site.said() and "--port" in site.said()
    assert not (tmp_path / "data" / "valkey").exists()


def test_a_flood_of_accept_errors_logs_one_line_a_second_without_tracebacks() -> None:
    throttle = Throttle()
    error = OSError(errno.EMFILE, "Too many open files")
    passed = []
    for _ in range(500):
        record = logging.LogRecord("asyncio", logging.ERROR, __file__, 1,
                                   "socket.accept() out of system resource\nsocket: <fd=6>", None,
                                   (OSError, error, None))
        if throttle.filter(record):
            passed.append(record)
    assert len(passed) == 1
    [line] = passed
    assert line.getMessage() == "socket.accept() out of system resource: [Errno 24] Too many open files"
    assert line.exc_info is None
    other = logging.LogRecord("emqlab.stream", logging.WARNING, __file__, 1, "a stream stalled", None, None)
    assert throttle.filter(other) and throttle.filter(other)  # everything else goes through
