"""One grader: a valkey-server of its own, its admin client, and the watchdog's own connection.

``load`` compiles the learner's script as admin on a fresh Lua VM (SCRIPT and FUNCTION FLUSH,
``math.random`` reseeded: nothing a run leaves in a VM reaches the next, done before a run so a
run ended any way at all leaves nothing); ``user`` makes the run's user; ``call`` runs the script
as it under the watchdog. ``end()`` SIGKILLs; the grader is then ``lost`` until ``restart()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable, Sequence
from typing import Final

from redis.asyncio import Redis
from redis.exceptions import RedisError, ResponseError

from server.emq import registry
from server.emq.script import Script
from server.exercises.errors import compile_refusal
from server.exercises.process import GraderProcess, ProcessLimits
from server.exercises.runkeys import SNAPSHOT
from server.exercises.runuser import RunUser, no_retry
from server.exercises.watchdog import Erred, Limits, Replied, Timed, watched

log = logging.getLogger(__name__)

HOST: Final = "127.0.0.1"
# Loaded again on every fresh VM, so the scenes meet no NOSCRIPT.
COURSE_SCRIPTS: Final[tuple[Script, ...]] = (*(registry.script(name) for name in registry.names()), SNAPSHOT)
RESEED: Final = "math.randomseed(tonumber(ARGV[1])) return 0"


class Grader:
    """One grading valkey-server and the clients the grader keeps on it."""

    def __init__(self, index: int, process_limits: ProcessLimits, limits: Limits) -> None:
        self.index = index
        self.process_limits = process_limits
        self.limits = limits
        self.process: GraderProcess | None = None
        self.admin: Redis | None = None
        self.guard: Redis | None = None
        self.lost = False
        self.starts = 0
        # told when the process ends on its own (the pool starts it again)
        self.on_lost: Callable[[Grader], None] | None = None

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
        self.lost = False
        self.starts += 1
        process.watch(lambda: self._ended(process))

    def _ended(self, process: GraderProcess) -> None:
        """The process ended and was reaped, and not by us (``end`` unwatches first)."""
        if process is not self.process:
            return
        code = process.code()
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        log.warning("grader %s (pid %s) ended on its own (%s); it is started again",
                    self.index, process.pid, how)
        self.lost = True
        if self.on_lost is not None:
            self.on_lost(self)

    def alive(self) -> bool:
        """Up and not ended: a grader that may be handed a run."""
        return not self.lost and self.process is not None and self.process.alive()

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
        """A fresh Lua VM, then SCRIPT LOAD as admin: the SHA, or ``DoesNotCompile``
        with Valkey's line. One round trip; a VM that does not close within the
        kill deadline raises ``TimeoutError`` (the caller ends the grader)."""
        admin = self.admin_client()
        async with admin.pipeline(transaction=False) as pipe:
            pipe.execute_command("SCRIPT", "FLUSH", "SYNC")
            pipe.execute_command("FUNCTION", "FLUSH", "SYNC")
            pipe.execute_command("EVAL", RESEED, 0, secrets.randbits(31))
            for script in COURSE_SCRIPTS:
                pipe.execute_command("SCRIPT", "LOAD", script.source)
            pipe.execute_command("SCRIPT", "LOAD", text)
            replies = await asyncio.wait_for(pipe.execute(raise_on_error=False), self.limits.kill_ms / 1000)
        for failed in replies[:-1]:
            if isinstance(failed, Exception):
                raise failed  # the grader's own steps: not the learner's to be told of
        sha = replies[-1]
        if isinstance(sha, ResponseError):
            raise compile_refusal(str(sha)) from sha
        if isinstance(sha, Exception):
            raise sha
        return str(sha.decode() if isinstance(sha, bytes) else sha)

    def user(self) -> RunUser:
        """A new run's user (not yet created on Valkey: ``open`` does)."""
        admin = self.admin_client()
        assert self.process is not None  # started with the admin client
        return RunUser(admin, HOST, self.process.port)

    async def call(
        self, client: Redis, sha: str, keys: Sequence[str], args: Sequence[str | int]
    ) -> tuple[Replied | Erred, float]:
        """EVALSHA as the run's user, under the watchdog, timed by Valkey's clock."""
        if self.guard is None:
            raise RuntimeError("the grader is not started")
        return await watched(_timed(client, sha, keys, args), self.guard, self.end, self.limits)


async def _timed(client: Redis, sha: str, keys: Sequence[str], args: Sequence[str | int]) -> Timed:
    """TIME, the EVALSHA, TIME: one round trip, and the script's time as Valkey
    counted it (nothing else runs on a grader between them)."""
    async with client.pipeline(transaction=False) as pipe:
        pipe.execute_command("TIME")
        # execute_command: the reply as Valkey sent it (redis-py's evalsha is typed as text)
        pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args)
        pipe.execute_command("TIME")
        before, value, after = await pipe.execute(raise_on_error=False)
    # TIME as redis-py parses it: (seconds, microseconds)
    return Timed(value, after[0] - before[0] + (after[1] - before[1]) / 1_000_000)
