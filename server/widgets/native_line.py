"""The native widget's wire: send one command line, and tell by the bytes (every
key's DUMP and TTL) what it changed. Lines shown name keys without the sandbox
prefix, as the console takes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis import exceptions as redis_errors
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from server.emq import registry
from server.emq.errors import EmqError
from server.emq.wire import Conn
from server.valkey import reply

UNKNOWN = "unknown command"  # what Valkey says for a command no module added


@dataclass(frozen=True)
class Sent:
    line: str
    reply: str  # as valkey-cli prints it: (integer) 1, (error) EMQSTATE …
    error: bool = False
    absent: bool = False  # the server has no such command: no EMQ module there


def words(parts: Sequence[Any]) -> str:
    """A command line as one string (every part here is a plain word)."""
    return " ".join(str(p) for p in parts)


def unprefixed(text: str, sandbox: str) -> str:
    """`text` with every key and queue of the sandbox named as the learner writes it."""
    return text.replace("{" + sandbox + ".", "{")


async def send(conn: Conn, parts: Sequence[Any]) -> Sent:
    """Send a command line as it is; every answer, an error too, is a reply."""
    line = words(parts)
    try:
        value = await conn.execute_command(*parts)
    except ResponseError as exc:
        text = "\n".join(reply.error_lines(exc))
        return Sent(line, text, error=True, absent=UNKNOWN in text)
    except (redis_errors.ConnectionError, redis_errors.TimeoutError):
        raise  # Valkey away: the endpoint answers 503
    except (RedisError, RedisClusterException) as exc:
        # A cluster client routes a command by the keys the server reports for
        # it; for a command no node knows, it refuses to send the line at all.
        return Sent(line, f"(not sent) the cluster client says: {exc}", error=True, absent=True)
    return Sent(line, "\n".join(reply.lines(value)))


async def send_script(conn: Conn, name: str, keys: Sequence[str], args: Sequence[str]) -> Sent:
    """Run script `name` by its SHA (loaded first where the server lacks it)
    and record the EVALSHA line that carried it."""
    script = registry.script(name)
    line = words(["EVALSHA", script.sha, len(keys), *keys, *args])
    try:
        value = await script.run(conn, keys, args)
    except EmqError as exc:
        return Sent(line, f"(error) {exc}", error=True)
    except ResponseError as exc:
        return Sent(line, "\n".join(reply.error_lines(exc)), error=True)
    return Sent(line, "\n".join(reply.lines(value)))


async def dumps(conn: Conn, names: Sequence[str]) -> dict[str, str]:
    """Each existing key's DUMP (hex) and PTTL: its bytes, compared across a line."""
    if not names:
        return {}
    # The names share the queue's hashtag (one slot): one pipelined round trip.
    async with conn.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.dump(name)
            pipe.pttl(name)
        replies = await pipe.execute()
    found = {}
    for i, name in enumerate(names):
        dumped, ttl = replies[2 * i], replies[2 * i + 1]
        if dumped is not None:
            raw = dumped if isinstance(dumped, bytes) else str(dumped).encode("utf-8", "surrogateescape")
            found[name] = f"{raw.hex()}/{ttl}"
    return found


def changes(before: dict[str, str], after: dict[str, str]) -> list[tuple[str, str]]:
    """Each key whose bytes differ, as (name, new | gone | changed); [] when none does."""
    found = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old != new:
            found.append((name, "new" if old is None else "gone" if new is None else "changed"))
    return found
