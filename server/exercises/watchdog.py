"""The watchdog: one call of a learner's script, stopped past ``script_ms`` by ``SCRIPT KILL`` on
a connection of its own. ``OK``: the run stops there (it would run away in the next check too);
``NOTBUSY``: a reply came in time, and its time by Valkey's clock (``Timed``, not the site's loaded
loop) decides; ``UNKILLABLE`` or no answer by ``kill_ms``: the grader is SIGKILLed and restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.valkey import reply
from server.valkey.client import ask_script_kill

# Valkey ends a script's error with where it happened, by SHA and line.
_WHERE_RE: Final = re.compile(r"\s*script: [0-9a-f]{40}, on @user_script:(\d+)\.?\s*$")
_RUNNING_RE: Final = re.compile(r"Error running script [0-9a-f]{40}, ")
# How deep a script's reply may nest: the course's replies nest two levels;
# past this the grader neither decodes nor pictures it (a reply nested
# thousands deep stops redis-py's parser or Python's recursion).
MAX_REPLY_DEPTH: Final = 32
TOO_DEEP: Final = (f"the script's reply nests deeper than {MAX_REPLY_DEPTH} levels, more than the grader "
                   "reads; return a flat value (a number, a string, or a list of them)")


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


@dataclass(frozen=True)
class Timed:
    """A call's reply (or Valkey's error) and its seconds by Valkey's clock."""

    value: Any
    seconds: float


class Halted(Exception):
    """The run cannot go on: ``said`` says why; ``lost`` means the grader was ended."""

    def __init__(self, said: str, lost: bool) -> None:
        super().__init__(said)
        self.said = said
        self.lost = lost


def too_deep(value: Any) -> bool:
    """Whether ``value`` nests past ``MAX_REPLY_DEPTH`` (walked without recursion)."""
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        if isinstance(item, list):
            if depth > MAX_REPLY_DEPTH:
                return True
            level.extend((inner, depth + 1) for inner in item)
    return False


def plain(value: Any) -> Any:
    """A reply with bytes decoded (any bytes: the script chose them)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [plain(item) for item in value]
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
        value, seconds = task.result().value, task.result().seconds
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
    return (Erred(TOO_DEEP) if too_deep(value) else Replied(plain(value))), seconds


async def watched(
    call: Awaitable[Timed], guard: Redis, end_process: Callable[[], None], limits: Limits
) -> tuple[Replied | Erred, float]:
    """Run ``call`` (the learner's EVALSHA, timed by Valkey): its outcome and seconds, or
    ``Halted`` when the script ran past ``limits.script_ms`` or the grader had to be ended."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = asyncio.ensure_future(call)
    try:
        await asyncio.wait({task}, timeout=limits.script_ms / 1000)
        if task.done():
            return _settle(task, loop.time() - started)
        stopped = f"stopped after {limits.script_ms} ms: the script did not finish"
        deadline = started + limits.kill_ms / 1000
        answer = await ask_script_kill(guard, deadline - loop.time())
        if answer == "NOTBUSY":
            # Nothing runs: the reply is in, or on its way, and the site was slow
            # to read it. The grace is the kill deadline's margin, from now.
            await asyncio.wait({task}, timeout=(limits.kill_ms - limits.script_ms) / 1000)
            if task.done():
                outcome, seconds = _settle(task, loop.time() - started)  # raises if the grader went
                if seconds * 1000 < limits.script_ms:
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
        end_process()
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
            end_process()
        raise
