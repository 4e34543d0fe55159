"""Send one command line to Valkey and record exactly what happened.

The native widget's record of a press: the line as it went over the wire,
Valkey's reply written the way `valkey-cli` prints it, and the queue's keys
before and after. "Nothing changed" is a claim about bytes: the DUMP of every
key (and its TTL) is compared, not a summary of the values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from redis import exceptions as redis_errors
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from server.emq import registry
from server.emq.wire import Conn
from server.valkey import reply
from server.widgets import snapshot

UNKNOWN = "unknown command"  # what Valkey says for a command no module added


@dataclass
class Sent:
    """One line sent and Valkey's answer to it."""

    line: str
    reply: str  # as valkey-cli prints it: (integer) 1, (error) EMQSTATE …
    error: bool = False
    sent: bool = True  # False only when the client refused to send it at all
    absent: bool = False  # the server has no such command: no EMQ module there


@dataclass
class KeyState:
    """A queue's keys at one moment: what the panel shows, and their bytes."""

    keys: list[dict[str, Any]] = field(default_factory=list)  # name, type, value
    dumps: dict[str, str] = field(default_factory=dict)  # name -> DUMP hex + TTL


def words(parts: Sequence[Any]) -> str:
    """A command line as one string (every part here is a plain word)."""
    return " ".join(str(p) for p in parts)


def reply_text(value: Any) -> str:
    """A reply the way valkey-cli prints it (server/valkey/reply.py, the console's rules)."""
    return "\n".join(reply.lines(value))


def error_text(exc: ResponseError) -> str:
    """The error reply as Valkey sent it, as valkey-cli prints it."""
    return "\n".join(reply.error_lines(exc))


async def send(conn: Conn, parts: Sequence[Any]) -> Sent:
    """Send a command line as it is; every answer, an error too, is a reply."""
    line = words(parts)
    try:
        value = await conn.execute_command(*parts)
    except ResponseError as exc:
        text = error_text(exc)
        return Sent(line, text, error=True, absent=UNKNOWN in text)
    except (redis_errors.ConnectionError, redis_errors.TimeoutError):
        raise  # Valkey away: the endpoint answers 503
    except (RedisError, RedisClusterException) as exc:
        # The cluster client routes by the keys the server reports for the
        # command; for a command no node knows it refuses to send at all.
        return Sent(line, f"not sent: the cluster client says {exc}", error=True, sent=False, absent=True)
    return Sent(line, reply_text(value))


async def send_script(conn: Conn, name: str, keys: Sequence[str], args: Sequence[str]) -> Sent:
    """Run script `name` by its SHA (loaded first when the server lacks it)
    and record the EVALSHA line that carried it."""
    script = registry.script_for(conn, name)
    line = words(["EVALSHA", script.sha, len(keys), *keys, *args])
    try:
        value = await script(keys=list(keys), args=list(args), client=conn)
    except ResponseError as exc:
        return Sent(line, error_text(exc), error=True)
    return Sent(line, reply_text(value))


async def key_state(conn: Conn, queue: str, job_ids: list[str]) -> KeyState:
    """Every key of the queue a flow can hold, read, and DUMPed with its TTL."""
    view = await snapshot.read_queue(conn, queue, job_ids)
    names = [k.name for k in view.keys]
    state = KeyState(keys=[{"name": k.name, "type": k.type, "value": k.value} for k in view.keys])
    if not names:
        return state
    # One slot (the queue's hashtag): one pipelined round trip.
    async with conn.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.dump(name)
            pipe.pttl(name)
        replies = await pipe.execute()
    for i, name in enumerate(names):
        dumped, ttl = replies[2 * i], replies[2 * i + 1]
        if dumped is not None:
            state.dumps[name] = f"{bytes(dumped).hex()}/{ttl}"
    return state


def changes(before: KeyState, after: KeyState) -> list[dict[str, str]]:
    """Each key whose bytes differ: new, gone, or changed; [] when none does."""
    found = []
    for name in sorted(set(before.dumps) | set(after.dumps)):
        old, new = before.dumps.get(name), after.dumps.get(name)
        if old == new:
            continue
        found.append({"name": name, "kind": "new" if old is None else "gone" if new is None else "changed"})
    return found


def record(action: str, sent: Sent, before: KeyState, after: KeyState) -> dict[str, Any]:
    """What the lab hash keeps of one press (the keys as shown, not the dumps)."""
    moved = changes(before, after)
    return {
        "action": action,
        **asdict(sent),
        "before": before.keys,
        "after": after.keys,
        "changes": moved,
        "unchanged": not moved,
    }
