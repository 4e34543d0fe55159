"""The watchdog: one call of a learner's script, and its reply as the checks read it.

``call`` stops the script past ``script_ms`` by ``SCRIPT KILL`` on the grader's connection of its
own. ``OK``: the run stops there (it would run away in the next check too); ``NOTBUSY``: a reply
came in time, and its time by Valkey's clock (``Timed``, not the site's loaded loop) decides;
``UNKILLABLE`` or no answer by ``kill_ms``: the grader is SIGKILLed and restarted.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.exercises.grader import Grader
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
class Replied:
    """The script returned; ``value`` is its reply (text decoded, lists kept)."""

    value: Any


@dataclass(frozen=True)
class Erred:
    """The script answered an error (its own, or Valkey's refusal of a command)."""

    message: str


Timed = tuple[Any, float]  # a call's reply (or Valkey's error) and its seconds by Valkey's clock


class Halted(Exception):
    """The run cannot go on: ``str()`` says why; ``lost`` means the grader was ended."""

    def __init__(self, said: str, lost: bool) -> None:
        super().__init__(said)
        self.lost = lost


def plain(value: Any, depth: int = 1) -> Any:
    """A reply with bytes decoded (any bytes: the script chose them); ``RecursionError`` past ``MAX_REPLY_DEPTH``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        if depth > MAX_REPLY_DEPTH:
            raise RecursionError(TOO_DEEP)
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
    seconds = took
    try:
        value, seconds = task.result()
        if isinstance(value, BaseException):
            raise value
        return Replied(plain(value)), seconds
    except (InvalidResponse, RecursionError):
        # redis-py gave up on the reply and drops the connection; the run's
        # next call opens another, so the run goes on with a verdict
        return Erred(TOO_DEEP), seconds
    except ResponseError as exc:
        return Erred(error_text(exc)), seconds
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise Halted("the grader stopped while the script ran (out of memory, or it crashed) "
                     "and was started again", lost=True) from exc


async def call(
    grader: Grader, client: Redis, sha: str, keys: Sequence[str], args: Sequence[str | int]
) -> tuple[Replied | Erred, float]:
    """EVALSHA as the run's user, timed by Valkey's clock, under the watchdog: its outcome and
    seconds, or ``Halted`` when the script ran past ``script_ms`` or the grader had to be ended."""
    if grader.guard is None:
        raise RuntimeError("the grader is not started")
    limits, loop = grader.limits, asyncio.get_running_loop()
    started = loop.time()
    task = asyncio.ensure_future(_timed(client, sha, keys, args))
    try:
        await asyncio.wait({task}, timeout=limits.script_ms / 1000)
        if task.done():
            return _settle(task, loop.time() - started)
        stopped = f"stopped after {limits.script_ms} ms: the script did not finish"
        deadline = started + limits.kill_ms / 1000
        answer = await ask_script_kill(grader.guard, deadline - loop.time())
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
        grader.end()
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
            grader.end()
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
