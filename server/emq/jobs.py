"""The job verbs: ``claim``, ``complete`` and ``fail``, where the fan-in starts.

The host reads the row's lineage (one HMGET) and passes the parent's keys as KEYS, so
no script builds a key from a hash value. The arm (flat, ``sq``, ``xq``) shows in the
layout sent: the native ``EMQ.FAIL`` refuses the flow layouts by their key count.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from redis.exceptions import RedisError

from server.emq import keyspace, registry
from server.emq.errors import EmqError, Gone, KindRefused, Stale, StateRefused
from server.emq.script import Call
from server.emq.wire import Conn, as_int, as_text, text

# Re-exported: the public contract names them jobs.Stale and jobs.Gone.
__all__ = ["EmqError", "Gone", "KindRefused", "Stale", "StateRefused"]

Mode = Literal["", "sq", "xq"]


def policy_arm(token: str | None) -> str:
    """'id' only when the row says so; missing or unknown tokens fail the parent."""
    return "id" if token == "id" else "fp"


@dataclass(frozen=True)
class Lineage:
    """Where a job's completion or death must be counted (mode "": nowhere)."""

    mode: Mode
    parent: str | None = None
    parent_queue: str = ""  # the parent's queue (this one for 'sq')
    policy: str = "fp"


LINEAGE_FIELDS = ("parent", "parent_queue", "parent_policy")


async def lineage(conn: Conn, queue: str, job_id: str) -> Lineage:
    """One HMGET of the row's parent fields, turned into the script's mode."""
    found = await conn.hmget(keyspace.job_key(queue, job_id), list(LINEAGE_FIELDS))
    return lineage_of(queue, *(text(v) for v in found))


def lineage_of_row(queue: str, row: Mapping[str, str] | None) -> Lineage | None:
    """The lineage a job row already read holds (None: no row read; `complete` reads it)."""
    return lineage_of(queue, *(row.get(f) for f in LINEAGE_FIELDS)) if row else None


def lineage_of(queue: str, parent: str | None, parent_queue: str | None, policy: str | None) -> Lineage:
    """The mode the row's `parent`, `parent_queue` and `parent_policy` call for."""
    if not parent:
        return Lineage(mode="")
    # Gate what the row says before it becomes a key: a corrupt field is
    # refused here rather than turned into a stray key.
    keyspace.check_id(parent)
    arm = policy_arm(policy)
    if parent_queue and parent_queue != queue:
        keyspace.check_queue(parent_queue)
        return Lineage(mode="xq", parent=parent, parent_queue=parent_queue, policy=arm)
    return Lineage(mode="sq", parent=parent, parent_queue=queue, policy=arm)


def _as_value(value: Any, default: str) -> str:
    if value is None:
        return default
    if isinstance(value, (str, bytes)):
        return text(value) or ""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


async def claim(conn: Conn, queue: str, lease_ms: int = 30000) -> tuple[str, int] | None:
    """Take the lowest-scored pending job; ``(job_id, token)`` or None."""
    reply = await registry.run(
        conn, "claim", [keyspace.queue_key(queue, "pending"), keyspace.queue_key(queue, "active")],
        [keyspace.base(queue), int(lease_ms)],
    )
    if not reply:
        return None
    job_id, token = reply
    return as_text(job_id), as_int(token)


def requeue_lapsed_call(queue: str, limit: int = 100) -> Call:
    """The `requeue_lapsed` call, for a caller's pipeline: its reply is the ids put back."""
    return (registry.script("requeue_lapsed"),
            [keyspace.queue_key(queue, "active"), keyspace.queue_key(queue, "pending")],
            [keyspace.base(queue), int(limit)])


async def requeue_lapsed(conn: Conn, queue: str, limit: int = 100) -> list[str]:
    """Put every job whose lease deadline has passed back into pending; their ids."""
    script, keys, args = requeue_lapsed_call(queue, limit)
    return [as_text(v) for v in await script.run(conn, keys, args) or []]


def complete_call(
    queue: str, job_id: str, token: int | str, line: Lineage, result: Any = None
) -> tuple[list[str], list[str]]:
    """The KEYS and ARGV ``complete.lua`` runs with: the seed's layout (also EMQ.COMPLETE's)."""
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job_id)]
    args = [job_id, str(token), keyspace.base(queue)]
    if line.parent is None:
        return keys, args
    args += [line.parent, _as_value(result, job_id)]
    if line.mode == "xq":
        keys.append(keyspace.outbox_key(queue))
        args += ["xq", line.parent_queue, line.policy]
    else:
        keys += [
            keyspace.dependencies_key(queue, line.parent),
            keyspace.processed_key(queue, line.parent),
            keyspace.job_key(queue, line.parent),
        ]
    return keys, args


async def complete(
    conn: Conn, queue: str, job_id: str, token: int | str, result: Any = None,
    *, line: Lineage | None = None, tail: list[tuple[Any, ...]] | None = None,
) -> None:
    """Complete a claimed job (recording ``result``, else its own id). Raises ``Stale`` or ``Gone``.
    ``line``: the lineage if already read; ``tail``: takes the best-effort DEL of ``:logs``."""
    line = line or await lineage(conn, queue, job_id)
    keys, args = complete_call(queue, job_id, token, line, result)
    done = as_int(await registry.run(conn, "complete", keys, args))
    if done == 0:
        raise Gone(f"gone: no job {job_id} in queue {queue}")
    # Logs of a finished job are dead weight; losing this DEL only leaves a key.
    command = ("DEL", keyspace.logs_key(queue, job_id))
    if tail is not None:
        tail.append(command)
        return
    with contextlib.suppress(RedisError):
        await conn.execute_command(*command)


def fail_call(
    queue: str, job_id: str, token: int | str, line: Lineage, error: str, max_attempts: int, backoff_ms: int,
) -> tuple[list[str], list[str]]:
    """The KEYS and ARGV ``fail.lua`` runs with: 4, 8 or 5 keys by the arm."""
    keys = [keyspace.queue_key(queue, "active"), keyspace.job_key(queue, job_id),
            keyspace.queue_key(queue, "schedule"), keyspace.queue_key(queue, "dead")]
    args = [job_id, str(token), _as_value(error, ""), str(int(max_attempts)), str(int(backoff_ms)),
            keyspace.base(queue)]
    if line.parent is None:
        return keys, args
    args += [line.parent, line.policy]
    if line.mode == "xq":
        keys.append(keyspace.outbox_key(queue))
        args.append(line.parent_queue)
    else:
        keys += [
            keyspace.job_key(queue, line.parent),
            keyspace.dependencies_key(queue, line.parent),
            keyspace.ignored_key(queue, line.parent),
            keyspace.queue_key(queue, "pending"),
        ]
    return keys, args


async def fail(
    conn: Conn, queue: str, job_id: str, token: int | str, error: str, max_attempts: int,
    backoff_ms: int = 1000, *, line: Lineage | None = None,
) -> str:
    """Fail a claimed job: ``"scheduled"`` below the cap, ``"dead"`` at it (where a
    flow child's policy decides its parent's fate). Raises and ``line`` as ``complete``."""
    line = line or await lineage(conn, queue, job_id)
    keys, args = fail_call(queue, job_id, token, line, error, max_attempts, backoff_ms)
    outcome = text(await registry.run(conn, "fail", keys, args))
    if outcome in ("scheduled", "dead"):
        return outcome
    raise Gone(f"gone: no job {job_id} in queue {queue}")
