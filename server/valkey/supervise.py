"""Keeps the managed valkey-server(s) running: a thread of `emqlab serve` restarts a dead
one on its own port and folder, one log line per restart.

A server killed after it ran comes back fast (pauses capped at 1 s: learners wait);
one that will not start backs off from 0.5 s doubling to 30 s (no busy loop).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from server.valkey.process import ValkeyProcess

log = logging.getLogger("emqlab.valkey")

POLL = 0.2  # seconds between two looks at each process
STEADY = 30.0  # seconds up after which a server's earlier deaths are forgotten
FIRST_PAUSE, LONGEST_PAUSE = 0.5, 30.0  # after failed starts in a row
FIRST_KILLED, LONGEST_KILLED = 0.25, 1.0  # after deaths in a row of a server that had started


def how_it_ended(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


def pause(tries: int, first: float, longest: float) -> float:
    """Seconds to wait before the next start, after `tries` deaths or failed starts in a row."""
    return 0.0 if tries == 0 else min(longest, first * 2.0 ** min(tries - 1, 8))


@dataclass
class Watch:
    server: ValkeyProcess
    started: float
    deaths: int = 0  # in a row, without a steady stretch between them
    failures: int = 0  # failed starts in a row
    retry_at: float = 0.0
    ended: str = ""


class Supervisor:
    def __init__(self, servers: Sequence[ValkeyProcess], poll: float = POLL) -> None:
        now = time.monotonic()
        self.watches = [Watch(server, now) for server in servers]
        self.poll = poll
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="emqlab-valkey-supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """No more restarts; returns once a restart under way has finished."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopping.wait(self.poll):
            for watch in self.watches:
                if self._stopping.is_set():
                    return
                self.check(watch)

    def check(self, watch: Watch) -> None:
        server, now = watch.server, time.monotonic()
        if server.proc is not None:
            code = server.proc.poll()  # reaps it when it has ended
            if code is None:
                if now - watch.started > STEADY:
                    watch.deaths = 0
                return
            watch.ended = how_it_ended(code)
            watch.retry_at = now + pause(watch.deaths, FIRST_KILLED, LONGEST_KILLED)
            watch.deaths += 1  # its failed starts were counted back to 0 when it last started
            server.proc = None
        if now < watch.retry_at:
            return
        try:
            server.start(timeout=30.0)
        except (RuntimeError, OSError) as exc:
            watch.failures += 1
            watch.retry_at = time.monotonic() + pause(watch.failures, FIRST_PAUSE, LONGEST_PAUSE)
            said = (str(exc).strip() or repr(exc)).splitlines()[0]
            log.warning("emqlab: valkey-server on port %d (%s) did not start again: %s; next try in %.1f s",
                        server.port, watch.ended, said, watch.retry_at - time.monotonic())
            return
        watch.started, watch.failures = time.monotonic(), 0
        self.restarts += 1
        assert server.proc is not None
        log.warning("emqlab: valkey-server on port %d %s; started it again on the same port and data (pid %d)",
                    server.port, watch.ended, server.proc.pid)
