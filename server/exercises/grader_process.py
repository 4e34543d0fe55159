"""One grader's valkey-server: loopback, temp dir, no persistence, ``requirepass``.

A low ``busy-reply-threshold`` (SCRIPT KILL heard 100 ms into a script), a small ``maxmemory`` for
keys and ``RLIMIT_AS`` for Lua's heap, which ``maxmemory`` does not count. Spawned from the loop's
thread (``PR_SET_PDEATHSIG`` fires when the forking *thread* exits); ``watch`` hears it end (pidfd).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import resource
import secrets
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from server.valkey import engine
from server.valkey.process import ValkeyProcess

HOST: Final = "127.0.0.1"
_PR_SET_PDEATHSIG: Final = 1
# Loaded once here: after fork the child should call into libc, not load it.
_LIBC: Final = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class ProcessLimits:
    address_space_mb: int = 256
    maxmemory_mb: int = 32
    busy_reply_ms: int = 100
    maxclients: int = 64


class GraderProcess(ValkeyProcess):
    """A valkey-server for grading; ``password`` is its admin password."""

    def __init__(self, limits: ProcessLimits) -> None:
        super().__init__(load_module=False)
        self.limits = limits
        self.password = secrets.token_urlsafe(24)
        self._pidfd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def command(self) -> list[str]:
        base = super().command()
        # The managed server's notification flags serve the site's live
        # stream; nobody subscribes to a grader, so they would only cost.
        if "--notify-keyspace-events" in base:
            at = base.index("--notify-keyspace-events")
            del base[at : at + 2]
        # Later directives win, so what a grader must be is said last, here,
        # whatever the site's own managed server comes to be configured with.
        return [
            *base,
            "--save", "",
            "--appendonly", "no",
            "--bind", HOST,
            "--requirepass", self.password,
            "--busy-reply-threshold", str(self.limits.busy_reply_ms),
            "--maxmemory", f"{self.limits.maxmemory_mb}mb",
            "--maxmemory-policy", "noeviction",
            "--maxclients", str(self.limits.maxclients),
            "--enable-debug-command", "no",
            "--enable-module-command", "no",
        ]

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def code(self) -> int | None:
        """The exit code (minus the signal that ended it), None while it runs."""
        return self.proc.poll() if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.code() is None

    def spawn(self) -> None:
        """Start the process (not waiting for it to answer: see ``Grader.start``)."""
        engine.checked(self.binary)  # not found, or older than the Lua fixes: refused in one sentence
        parent, space = os.getpid(), self.limits.address_space_mb * 1024 * 1024

        def in_child() -> None:
            # SIGKILL, not SIGTERM: a grader may be inside a script and deaf to
            # anything gentler, and it holds nothing worth a clean shutdown.
            _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:  # the parent died before prctl took effect
                os._exit(1)
            resource.setrlimit(resource.RLIMIT_AS, (space, space))

        self.proc = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=in_child,  # noqa: PLW1509 -- only prctl and setrlimit run there
        )

    def watch(self, on_exit: Callable[[], None]) -> None:
        """Call ``on_exit`` on the loop once the process ended and was reaped. Without
        pidfds nothing is watched: a dead grader is found when next handed out (``alive``)."""
        if self.proc is None or self._pidfd is not None:
            return
        try:
            pidfd = os.pidfd_open(self.proc.pid)
        except (OSError, AttributeError):
            return
        self._pidfd = pidfd
        self._loop = loop = asyncio.get_running_loop()

        def ended() -> None:
            self._unwatch()
            if self.proc is not None:
                self.proc.poll()  # reaps it: a zombie's slot is freed now
            on_exit()

        loop.add_reader(pidfd, ended)

    def _unwatch(self) -> None:
        pidfd, self._pidfd = self._pidfd, None
        if pidfd is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to remove
                self._loop.remove_reader(pidfd)
            os.close(pidfd)

    def kill(self) -> None:
        """SIGKILL and reap: for a process stuck inside a script. Its dir goes too."""
        self._unwatch()  # an end we chose is no news to the grader
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=2)  # a SIGKILLed process is reaped in microseconds
        shutil.rmtree(self.dir, ignore_errors=True)
