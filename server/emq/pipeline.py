"""Several of EchoMQ's scripts in ONE round trip, in order.

A caller that knows what one transition will answer can send the next one
beside it (`jobs.claim_and_complete`). redis-py's own pipelines would first
ask SCRIPT EXISTS for every registered script, a round trip of its own; this
sends the EVALSHAs of the scripts `registry` registered, and loads a script
only when Valkey answers NOSCRIPT (a restart, SCRIPT FLUSH).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from server.emq import registry
from server.emq.errors import EmqError, translate
from server.emq.registry import Arg
from server.emq.wire import Conn


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
