"""Several of EchoMQ's scripts in ONE round trip, in order.

A caller that knows what one transition will answer can send the next one
beside it (`jobs.claim_and_complete`). redis-py's own pipelines would first
ask SCRIPT EXISTS for every registered script, a round trip of its own; this
sends the EVALSHAs of the scripts `registry` registered, and loads a script
only when Valkey answers NOSCRIPT (a restart, SCRIPT FLUSH).

A `Batch` goes one step further: the host library writes its scripts and
commands into it instead of sending them, and the caller sends the whole
batch inside a round trip of its own (a widget's closing one), reading the
replies as they stand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from server.emq import registry
from server.emq.errors import EmqError, translate
from server.emq.registry import Arg
from server.emq.wire import Conn, Pipe

Command = tuple[Any, ...]


async def run_many(conn: Conn, calls: Sequence[tuple[str, Sequence[str], Sequence[Arg]]]) -> list[Any]:
    """Run `calls` (script name, KEYS, ARGV) in order, one pipeline. A call
    answered NOSCRIPT is sent again alone, after the others, in its turn.
    Each reply is the script's answer or its typed ``EmqError``, returned,
    not raised: the caller reads the replies as they stand."""
    scripts = [registry.script_for(conn, name) for name, _, _ in calls]
    async with conn.pipeline(transaction=False) as pipe:
        for script, (_, keys, args) in zip(scripts, calls, strict=True):
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
        replies = list(await pipe.execute(raise_on_error=False))
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError):
            try:
                replies[i] = await registry.call(scripts[i], conn, calls[i][1], calls[i][2])
            except EmqError as exc:
                replies[i] = exc
        elif isinstance(reply, ResponseError):
            replies[i] = translate(reply)
        elif isinstance(reply, Exception):
            raise reply
    return replies


async def send(conn: Conn, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Plain commands (no scripts) in order, one round trip; the first error
    reply raises, after every reply was read. Nothing to send: no round trip."""
    if not commands:
        return []
    async with conn.pipeline(transaction=False) as pipe:
        for command in commands:
            pipe.execute_command(*command)
        return list(await pipe.execute())


@dataclass
class Batch:
    """EchoMQ scripts (by name) and plain commands, kept in order for a round
    trip the caller sends later, with its own commands after them."""

    steps: list[tuple[str | None, Command]] = field(default_factory=list)

    def script(self, name: str, keys: Sequence[str], args: Sequence[Arg]) -> None:
        self.steps.append((name, (len(keys), *keys, *args)))

    def command(self, *args: Any) -> None:
        self.steps.append((None, args))

    def __len__(self) -> int:
        return len(self.steps)

    def queue(self, conn: Conn, pipe: Pipe) -> None:
        """Put every step on `pipe`: a script as one EVALSHA of its registered SHA."""
        for name, args in self.steps:
            if name is None:
                pipe.execute_command(*args)
            else:
                pipe.execute_command("EVALSHA", registry.script_for(conn, name).sha, *args)

    async def load_missing(self, conn: Conn, replies: Sequence[Any]) -> None:
        """Load, for next time, each script Valkey answered NOSCRIPT to; it is
        never run again here: the caller decides what a refused step means."""
        for (name, _), reply in zip(self.steps, replies, strict=True):
            if isinstance(reply, NoScriptError) and name is not None:
                await conn.script_load(registry.script_source(name))
