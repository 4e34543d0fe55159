"""One grader: a valkey-server of its own, its admin client, and its watchdog line.

A grader serves one run at a time (the pool sees to that). For a run it:

1. loads the learner's script with ``SCRIPT LOAD`` as admin — the compile
   check: Valkey's own compiler answers, with the line (``DoesNotCompile``);
2. creates the run's user (``runuser``) and a connection that runs as it;
3. calls the script by SHA as that user, under the watchdog, whose
   ``SCRIPT KILL`` goes on a connection of its own (``guard``): the run's
   connection is the one stuck waiting for the script;
4. deletes the user and sweeps the run's keys.

``end()`` is the watchdog's last resort: SIGKILL. The grader is then
``lost`` until ``restart()`` gives it a new process (new port, new
password, nothing carried over: it never held anything but runs).
Scripts loaded with SCRIPT LOAD stay in Valkey's cache, so it is flushed
every ``FLUSH_EVERY`` loads; the course's scripts and the grader's own are
``Script``s and come back on their own (NOSCRIPT, then load).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Final

from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from server.exercises.errors import compile_refusal
from server.exercises.process import GraderProcess, ProcessLimits
from server.exercises.runkeys import RunKeys
from server.exercises.runuser import RunUser, no_retry
from server.exercises.watchdog import Erred, Limits, Replied, watched

HOST: Final = "127.0.0.1"
FLUSH_EVERY: Final = 64


class Grader:
    """One grading valkey-server and the clients the grader keeps on it."""

    def __init__(self, index: int, process_limits: ProcessLimits, limits: Limits) -> None:
        self.index = index
        self.process_limits = process_limits
        self.limits = limits
        self.process: GraderProcess | None = None
        self.admin: Redis | None = None
        self.guard: Redis | None = None
        self.keys: RunKeys | None = None
        self.lost = False
        self.loads = 0
        self.starts = 0

    def __repr__(self) -> str:
        pid = self.process.pid if self.process else None
        return f"<Grader {self.index} pid={pid} lost={self.lost}>"

    @property
    def url(self) -> str:
        """The admin URL (password included): for the tests, which compare keys around a run."""
        if self.process is None:
            raise RuntimeError("the grader is not started")
        return f"redis://:{self.process.password}@{HOST}:{self.process.port}/0"

    def admin_client(self) -> Redis:
        if self.admin is None:
            raise RuntimeError("the grader is not started")
        return self.admin

    def run_keys(self) -> RunKeys:
        if self.keys is None:
            raise RuntimeError("the grader is not started")
        return self.keys

    def _client(self, process: GraderProcess, *, single: bool) -> Redis:
        return Redis(host=HOST, port=process.port, password=process.password, retry=no_retry(),
                     single_connection_client=single, socket_connect_timeout=2)

    async def start(self, within: float = 10.0) -> None:
        """Start a new process and wait until it answers as admin."""
        process = GraderProcess(self.process_limits)
        process.spawn()
        admin = self._client(process, single=False)
        try:
            await self._answered(process, admin, within)
        except BaseException:
            # failed, or cancelled by the pool's stop: no process outlives its grader
            with contextlib.suppress(RedisError, OSError):
                await admin.aclose()
            process.kill()
            raise
        self.process, self.admin = process, admin
        # The watchdog's line is opened (and authenticated) now, so that at
        # 500 ms it sends SCRIPT KILL alone, with no handshake in its way
        # (a busy Valkey answers AUTH, but BUSY to the client's SETINFO).
        guard = self._client(process, single=True)
        await guard.ping()
        self.guard = guard
        self.keys = RunKeys(admin)
        self.lost, self.loads = False, 0
        self.starts += 1

    async def _answered(self, process: GraderProcess, admin: Redis, within: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            try:
                await admin.ping()
                return
            except (RedisError, OSError) as exc:
                if not process.alive() or loop.time() > deadline:
                    note = process.exit_note() if not process.alive() else f"no answer within {within} s"
                    raise RuntimeError(f"grader {self.index} did not start: {note}") from exc
                await asyncio.sleep(0.01)

    async def _drop_clients(self) -> None:
        for client in (self.guard, self.admin):
            if client is not None:
                with contextlib.suppress(RedisError, OSError):
                    await client.aclose()
        self.guard = self.admin = None
        self.keys = None

    async def stop(self) -> None:
        await self._drop_clients()
        if self.process is not None:
            await self.process.close()
            self.process = None

    def end(self) -> None:
        """SIGKILL the process now (a script Valkey cannot stop); restart() follows."""
        self.lost = True
        if self.process is not None:
            self.process.kill()

    async def restart(self) -> None:
        await self._drop_clients()
        if self.process is not None:
            self.process.kill()
            self.process = None
        await self.start()

    async def load(self, text: str) -> str:
        """SCRIPT LOAD as admin: the SHA, or ``DoesNotCompile`` with Valkey's line."""
        admin = self.admin_client()
        if self.loads >= FLUSH_EVERY:
            await admin.script_flush("SYNC")
            self.loads = 0
        try:
            sha = await admin.script_load(text)
        except ResponseError as exc:
            raise compile_refusal(str(exc)) from exc
        self.loads += 1
        return str(sha.decode() if isinstance(sha, bytes) else sha)

    def user(self, run_id: str) -> RunUser:
        if self.process is None:
            raise RuntimeError("the grader is not started")
        return RunUser(self.run_keys(), HOST, self.process.port, run_id)

    async def call(
        self, client: Redis, sha: str, keys: Sequence[str], args: Sequence[str | int]
    ) -> tuple[Replied | Erred, float]:
        """EVALSHA as the run's user, under the watchdog."""
        if self.guard is None:
            raise RuntimeError("the grader is not started")
        # execute_command: the reply as Valkey sent it (redis-py's evalsha is typed as text)
        call = client.execute_command("EVALSHA", sha, len(keys), *keys, *args)  # type: ignore[no-untyped-call]
        return await watched(call, self.guard, self.end, self.limits)
