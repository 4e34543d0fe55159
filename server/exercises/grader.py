"""One grader: a valkey-server of its own, its admin client, the watchdog's own connection, each run's user.

Its process (``grader_process``) is a valkey-server confined by limits of its own.

``load`` compiles the learner's script as admin on a fresh Lua VM (SCRIPT and FUNCTION FLUSH,
``math.random`` reseeded: nothing a run leaves in a VM reaches the next, done before a run so a
run ended any way at all leaves nothing); ``run_user`` makes the run's user; ``watchdog.call`` runs
the script as it. ``end()`` SIGKILLs; the grader is then ``lost`` until ``restart()``.

The run's user is how Valkey itself confines a learner's script: the run's id is in every key's
hashtag and the user has that one key pattern (``~emq:{<run>.*``). Commands are granted by category,
then keyless, server-wide, key-moving (SELECT, MOVE, COPY…), blocking and pub/sub ones are denied;
of scripting only EVALSHA stays (the admin loads the script). The admin (the user has no SCAN)
sweeps the run's keys afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import string
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError, ResponseError

from server.emq import registry
from server.emq.script import Script
from server.exercises.errors import compile_refusal
from server.exercises.grader_process import HOST, GraderProcess, ProcessLimits
from server.exercises.outcome import SNAPSHOT

log = logging.getLogger(__name__)

# Loaded again on every fresh VM, so the scenes meet no NOSCRIPT.
COURSE_SCRIPTS: Final[tuple[Script, ...]] = (*(registry.script(name) for name in registry.names()), SNAPSHOT)
RESEED: Final = "math.randomseed(tonumber(ARGV[1])) return 0"
SWEEP_COUNT: Final = 500  # keys per SCAN/UNLINK round of the sweep
_ALPHABET: Final = string.ascii_lowercase + string.digits

GRANTED: Final = (
    "+@string", "+@hash", "+@list", "+@set", "+@sortedset", "+@bitmap", "+@hyperloglog",
    "+@geo", "+@stream", "+@keyspace", "+time", "+ping", "+echo", "+evalsha",
)
DENIED: Final = (
    "-@dangerous", "-@admin", "-@blocking", "-@pubsub", "-@scripting", "+evalsha",
    "-keys", "-scan", "-randomkey", "-dbsize", "-flushall", "-flushdb", "-select", "-swapdb",
    "-move", "-copy", "-migrate", "-restore", "-wait", "-waitaof", "-memory", "-lolwut",
    "-object", "-client", "-info", "-config", "-debug", "-shutdown", "-acl", "-module",
    "-script", "-function", "-eval", "-fcall", "-fcall_ro", "-eval_ro", "-evalsha_ro",
    # SORT's BY/GET read keys by pattern; the rest are server-wide, denied by
    # name as the site's sandbox users deny them (server/console/as_user.py)
    "-sort", "-sort_ro", "-monitor", "-subscribe", "-psubscribe", "-ssubscribe", "-save", "-bgsave",
    "-replicaof", "-cluster",
)


@dataclass(frozen=True)
class Limits:
    """Time allowed to a learner's script (ms): per call, before SIGKILL, per run."""

    script_ms: int = 500
    # SCRIPT KILL's answer gets the margin over script_ms: 300 ms was too little on a busy 2-core
    # machine, where a plain runaway then cost a SIGKILL, a restart, and a wrong sentence.
    kill_ms: int = 1500
    budget_ms: int = 600


def new_run_id() -> str:
    """``r`` + 10 random characters: a queue-name part no other run will hold."""
    return "r" + "".join(secrets.choice(_ALPHABET) for _ in range(10))


def run_pattern(run_id: str) -> str:
    """Every key of the run (and the ACL key pattern of its user, less the ``~``)."""
    return "emq:{" + run_id + ".*"


async def sweep(admin: Redis, pattern: str) -> None:
    """UNLINK every key matching ``pattern``."""
    cursor = 0
    while True:
        cursor, found = await admin.scan(cursor=cursor, match=pattern, count=SWEEP_COUNT)
        if found:
            await admin.unlink(*found)
        if int(cursor) == 0:
            return


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

    @staticmethod
    def _client(process: GraderProcess, **options: Any) -> Redis:
        # No retry: a grader that died must not be retried in silence.
        return Redis(host=HOST, port=process.port, retry=Retry(NoBackoff(), 0), socket_connect_timeout=2, **options)

    async def start(self, within: float = 10.0) -> None:
        """Start a new process and wait until it answers as admin."""
        process = GraderProcess(self.process_limits)
        process.spawn()
        admin = self._client(process, password=process.password)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        try:
            while True:
                with contextlib.suppress(RedisError, OSError):
                    await admin.ping()
                    break
                if not process.alive():
                    # why the process is gone, for the operator: its code and its log's tail
                    logged = process.dir / "valkey.log"
                    tail = logged.read_text("utf-8", "replace")[-400:].strip() if logged.exists() else ""
                    raise RuntimeError(f"grader {self.index} did not start: valkey-server exited "
                                       f"({process.code()}): {tail}")
                if loop.time() > deadline:
                    raise RuntimeError(f"grader {self.index} did not start: no answer within {within} s")
                await asyncio.sleep(0.01)
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
        guard = self._client(process, password=process.password, single_connection_client=True)
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

    async def stop(self) -> None:
        for client in (self.guard, self.admin):
            if client is not None:
                with contextlib.suppress(RedisError, OSError):
                    await client.aclose()
        self.guard = self.admin = None
        if self.process is not None:
            self.process.kill()  # SIGKILL: it keeps nothing, and a script would keep it deaf to SIGTERM
            self.process = None

    def end(self) -> None:
        """SIGKILL the process now (a script Valkey cannot stop); restart() follows."""
        self.lost = True
        if self.process is not None:
            self.process.kill()

    async def restart(self) -> None:
        # A grader is restarted once lost: its process already ended (on its own, or by end()).
        await self.stop()
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

    @asynccontextmanager
    async def run_user(self) -> AsyncIterator[tuple[str, Redis]]:
        """A new run's id and a connection as its own user, made for the block (``reset`` first:
        nothing inherited). After it, the connection, the user, then the run's keys go (a key swept
        while the user could still write would come back), unless the lost process took them all."""
        admin, run_id = self.admin_client(), new_run_id()
        name, password = f"run-{run_id}", secrets.token_urlsafe(18)
        await admin.execute_command(  # type: ignore[no-untyped-call]
            "ACL", "SETUSER", name, "reset", "on", f">{password}",
            f"~{run_pattern(run_id)}", "resetchannels", "-@all", *GRANTED, *DENIED,
        )
        assert self.process is not None  # started with the admin client
        # a pool, not a single connection: the grader's timed call is a pipeline, which redis-py
        # takes from the pool (it keeps one idle). No CLIENT SETINFO: the user may not run it.
        client = self._client(self.process, username=name, password=password, driver_info=None)
        await client.ping()
        try:
            yield run_id, client
        finally:
            with contextlib.suppress(RedisError, OSError):
                await client.aclose()
            if not self.lost:
                await admin.acl_deluser(name)
                await sweep(admin, run_pattern(run_id))

