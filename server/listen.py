"""How the site listens: a socket of its own, handed to uvicorn by descriptor,
connection bounds sized to the process's descriptors, and a log a flood cannot fill.

`limit_concurrency` keeps a reserve of descriptors for what the site opens
itself (past it uvicorn answers 503 at once); `Throttle` lets through one line
a second of each error a flood repeats, with a count of those held back.
(uvicorn has no header timeout: nginx in front closes slow clients, docs/DEPLOY.md.)
"""

from __future__ import annotations

import copy
import errno
import logging
import resource
import socket
import threading
import time
from typing import Any

MOST_DESCRIPTORS = 1 << 20  # what RLIM_INFINITY counts as
NOISY = {
    "accept failed": "socket.accept() out of system resource",
    "over the limit": "Exceeded concurrency limit",
    "out of descriptors": "Too many open files",
}


def connection_limits(descriptors: int | None = None) -> tuple[int, int]:
    """(limit_concurrency, backlog) for a process allowed `descriptors` open files (by default, this one)."""
    if descriptors is None:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        descriptors = MOST_DESCRIPTORS if soft == resource.RLIM_INFINITY else int(soft)
    reserve = max(64, descriptors // 10)
    limit = max(16, descriptors - reserve)
    return limit, max(16, min(2048, limit // 4))


def listening_socket(host: str, port: int, backlog: int | None = None) -> socket.socket:
    """A TCP socket bound and listening on host:port (`backlog`: this process's); OSError when the port is taken."""
    from server.settings import Settings

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by accepted connections; uvicorn takes a given descriptor for a
        # unix socket and never sets it, and Nagle would delay keep-alive replies 40 ms.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Inherited too: uvicorn's close waits for unsent bytes a stalled reader never
        # takes; past the stream's send timeout without an ACK the kernel drops the connection.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 1000 * Settings.from_env().stream_send_timeout)
        sock.bind((host, port))
        sock.listen(connection_limits()[1] if backlog is None else backlog)
    except OSError:
        sock.close()
        raise
    return sock


class Throttle(logging.Filter):
    """At most one record a second of each noisy kind, made one line."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self.lock = threading.Lock()
        self.last: dict[str, float] = {}
        self.held: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        error = record.exc_info[1] if record.exc_info else None
        kind = next((kind for kind, text in NOISY.items() if text in message), None)
        if kind is None and isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE):
            kind = "out of descriptors"
        if kind is None:
            return True
        now = time.monotonic()
        with self.lock:
            if now - self.last.get(kind, -1.0) < 1.0:
                self.held[kind] = self.held.get(kind, 0) + 1
                return False
            self.last[kind] = now
            held = self.held.pop(kind, 0)
        line = message.splitlines()[0]
        if error is not None:
            line = f"{line}: {error}"
        if held:
            line = f"{line} ({held} more like it held back since the last one)"
        record.msg, record.args = line, None
        record.exc_info, record.exc_text = None, None
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's own logging setup, every handler throttled; asyncio's errors
    (accept failures) and the site's `emqlab` loggers go through it too, the
    latter printed as before (the bare message, WARNING and up, on stderr)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"throttle": {"()": "server.listen.Throttle"}}
    config["formatters"]["plain"] = {"format": "%(message)s"}
    for handler in config["handlers"].values():
        handler["filters"] = ["throttle"]
    config["handlers"]["plain"] = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                   "formatter": "plain", "filters": ["throttle"]}
    config["loggers"]["asyncio"] = {"handlers": ["default"], "level": "WARNING", "propagate": False}
    config["loggers"]["emqlab"] = {"handlers": ["plain"], "level": "WARNING", "propagate": False}
    return config


def run_uvicorn(factory: str, host: str, port: int, workers: int = 1, log_level: str = "warning",
                *, sock: socket.socket | None = None, **options: Any) -> None:
    """uvicorn.run on an app factory, 1 or N workers, on `sock` (else one bound to host:port here)."""
    import uvicorn

    limit, backlog = connection_limits()
    if sock is None:
        sock = listening_socket(host, port, backlog)
    # The site reads X-Forwarded-For itself, only when EMQLAB_TRUST_FORWARDED_FOR
    # says a proxy stands in front: uvicorn must not rewrite the client first.
    options = {"proxy_headers": False, "limit_concurrency": limit, "log_config": log_config(), **options}
    try:
        uvicorn.run(factory, factory=True, fd=sock.fileno(), workers=workers, log_level=log_level,
                    backlog=backlog, timeout_graceful_shutdown=3, **options)
    finally:
        sock.close()
