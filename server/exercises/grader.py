"""One grader: a valkey-server of its own, its admin client, the watchdog's own connection, each run's user.

Its process (``grader_process``) is a valkey-server confined by limits of its own.

``load`` compiles the learner's script as admin on a fresh Lua VM (SCRIPT and FUNCTION FLUSH,
``math.random`` reseeded: nothing a run leaves in a VM reaches the next, done before a run so a
run ended any way at all leaves nothing); ``run_user`` makes the run's user; ``call`` runs the
script as it under the watchdog. ``end()`` SIGKILLs; the grader is then ``lost`` until ``restart()``.

The run's user is how Valkey itself confines a learner's script: the run's id is in every key's
hashtag and the user has that one key pattern (``~emq:{<run>.*``). Commands are granted by category,
then keyless, server-wide, key-moving (SELECT, MOVE, COPY…), blocking and pub/sub ones are denied;
of scripting only EVALSHA stays (the admin loads the script). The admin (the user has no SCAN)
sweeps the run's keys afterwards.

The watchdog (``call``): one call of a learner's script, stopped past ``script_ms`` by ``SCRIPT
KILL`` on a connection of its own. ``OK``: the run stops there (it would run away in the next check
too); ``NOTBUSY``: a reply came in time, and its time by Valkey's clock (``Timed``, not the site's
loaded loop) decides; ``UNKILLABLE`` or no answer by ``kill_ms``: the grader is SIGKILLed and restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import string
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.emq import registry
from server.emq.script import Script
from server.exercises.errors import compile_refusal
from server.exercises.grader_process import HOST, GraderProcess, ProcessLimits
from server.exercises.outcome import SNAPSHOT
from server.valkey import reply
from server.valkey.client import ask_script_kill

log = logging.getLogger(__name__)

# Loaded again on every fresh VM, so the scenes meet no NOSCRIPT.
COURSE_SCRIPTS: Final[tuple[Script, ...]] = (*(registry.script(name) for name in registry.names()), SNAPSHOT)
RESEED: Final = "math.randomseed(tonumber(ARGV[1])) return 0"
# Valkey ends a script's error with where it happened, by SHA and line.
_WHERE_RE: Final = re.compile(r"\s*script: [0-9a-f]{40}, on @user_script:(\d+)\.?\s*$")
_RUNNING_RE: Final = re.compile(r"Error running script [0-9a-f]{40}, ")
# How deep a script's reply may nest: the course's replies nest two levels;
# past this the grader neither decodes nor pictures it (a reply nested
# thousands deep stops redis-py's parser or Python's recursion).
MAX_REPLY_DEPTH: Final = 32
TOO_DEEP: Final = (f"the script's reply nests deeper than {MAX_REPLY_DEPTH} levels, more than the grader "
                   "reads; return a flat value (a number, a string, or a list of them)")
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


@dataclass(frozen=True)
class Replied:
    """The script returned; ``value`` is its reply (text decoded, lists kept)."""

    value: Any


@dataclass(frozen=True)
class Erred:
    """The script answered an error (its own, or Valkey's refusal of a command)."""

    message: str


Timed = tuple[Any, float]  # a call's reply (or Valkey's error) and its seconds by Valkey's clock


class Halted(Exception):
    """The run cannot go on: ``said`` says why; ``lost`` means the grader was ended."""

    def __init__(self, said: str, lost: bool) -> None:
        super().__init__(said)
        self.said = said
        self.lost = lost


class TooDeep(Exception):
    """A reply nested past ``MAX_REPLY_DEPTH``."""


def plain(value: Any, depth: int = 1) -> Any:
    """A reply with bytes decoded (any bytes: the script chose them); ``TooDeep`` past ``MAX_REPLY_DEPTH``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        if depth > MAX_REPLY_DEPTH:
            raise TooDeep
        return [plain(item, depth + 1) for item in value]
    return value


def error_text(exc: ResponseError) -> str:
    """Valkey's error as the learner should read it: the code (reply.error_text,
    however redis-py split it off), the words, and the script line — not the SHA."""
    text = reply.error_text(exc)
    found = _WHERE_RE.search(text)
    if found:
        text = f"{text[: found.start()]} (line {found.group(1)})"
    text = _RUNNING_RE.sub("Error running the script: ", text)
    if "ACL failure" in text or text.startswith("NOPERM"):
        text += "; the run's user may touch only this run's keys and no server-wide command"
    return text


def _settle(task: asyncio.Future[Timed], took: float) -> tuple[Replied | Erred, float]:
    """The call's reply, or its error (raised, or in its place in the round trip), and its time."""
    value: Any = task.exception()
    seconds = took
    if value is None:
        value, seconds = task.result()
    if isinstance(value, (InvalidResponse, RecursionError)):
        # redis-py gave up on the reply and drops the connection; the run's
        # next call opens another, so the run goes on with a verdict
        return Erred(TOO_DEEP), seconds
    if isinstance(value, ResponseError):
        return Erred(error_text(value)), seconds
    if isinstance(value, (RedisConnectionError, RedisTimeoutError, OSError)):
        raise Halted("the grader stopped while the script ran (out of memory, or it crashed) "
                     "and was started again", lost=True) from value
    if isinstance(value, BaseException):
        raise value
    try:
        return Replied(plain(value)), seconds
    except TooDeep:
        return Erred(TOO_DEEP), seconds


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
    def _client(process: GraderProcess, *, single: bool) -> Redis:
        # No retry: a grader that died must not be retried in silence.
        return Redis(host=HOST, port=process.port, password=process.password, retry=Retry(NoBackoff(), 0),
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
                if not process.alive():
                    # why the process is gone, for the operator: its code and its log's tail
                    logged = process.dir / "valkey.log"
                    tail = logged.read_text("utf-8", "replace")[-400:].strip() if logged.exists() else ""
                    raise RuntimeError(f"grader {self.index} did not start: valkey-server exited "
                                       f"({process.code()}): {tail}") from exc
                if loop.time() > deadline:
                    raise RuntimeError(f"grader {self.index} did not start: no answer within {within} s") from exc
                await asyncio.sleep(0.01)

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
        client = Redis(host=HOST, port=self.process.port, username=name, password=password,
                       retry=Retry(NoBackoff(), 0), socket_connect_timeout=2, driver_info=None)
        await client.ping()
        try:
            yield run_id, client
        finally:
            with contextlib.suppress(RedisError, OSError):
                await client.aclose()
            if not self.lost:
                await admin.acl_deluser(name)
                await sweep(admin, run_pattern(run_id))

    async def call(
        self, client: Redis, sha: str, keys: Sequence[str], args: Sequence[str | int]
    ) -> tuple[Replied | Erred, float]:
        """EVALSHA as the run's user, timed by Valkey's clock, under the watchdog: its outcome and
        seconds, or ``Halted`` when the script ran past ``script_ms`` or the grader had to be ended."""
        if self.guard is None:
            raise RuntimeError("the grader is not started")
        loop = asyncio.get_running_loop()
        started = loop.time()
        task = asyncio.ensure_future(_timed(client, sha, keys, args))
        try:
            await asyncio.wait({task}, timeout=self.limits.script_ms / 1000)
            if task.done():
                return _settle(task, loop.time() - started)
            stopped = f"stopped after {self.limits.script_ms} ms: the script did not finish"
            deadline = started + self.limits.kill_ms / 1000
            answer = await ask_script_kill(self.guard, deadline - loop.time())
            if answer == "NOTBUSY":
                # Nothing runs: the reply is in, or on its way, and the site was slow
                # to read it. The grace is the kill deadline's margin, from now.
                await asyncio.wait({task}, timeout=(self.limits.kill_ms - self.limits.script_ms) / 1000)
                if task.done():
                    outcome, seconds = _settle(task, loop.time() - started)  # raises if the grader went
                    if seconds * 1000 < self.limits.script_ms:
                        return outcome, seconds
                    raise Halted(stopped, lost=False)
            if answer == "OK":
                await asyncio.wait({task}, timeout=max(deadline - loop.time(), 0))
                if task.done():
                    _settle(task, 0.0)  # raises if the grader went meanwhile; any reply is moot
                    raise Halted(stopped, lost=False)
            if answer == "UNKILLABLE":
                said = (f"{stopped}, and it had already written, so Valkey could not stop it "
                        "half-way: the grader was ended and started again")
            else:
                said = (f"{stopped}, and Valkey did not answer SCRIPT KILL (one long C call such as a huge "
                        "string.rep runs no Lua hook): the grader was ended and started again")
            self.end()
            # let the call whose server was killed fail, and keep its error to ourselves
            await asyncio.wait({task}, timeout=1.0)
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise Halted(said, lost=True)
        except Halted as halt:
            if halt.lost:
                # Gone, or not quite: a crashing valkey-server can hang in its own
                # crash report, port open. Either way it is ended for good here.
                self.end()
            raise


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
    return value, after[0] - before[0] + (after[1] - before[1]) / 1_000_000
