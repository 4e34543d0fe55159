"""The three pure reads of what the fan-in writes on a parent (no key is created or changed)."""

from __future__ import annotations

from server.emq import keyspace
from server.emq.wire import Conn, as_dict, as_int


async def children_values(conn: Conn, queue: str, parent_id: str) -> dict[str, str]:
    """Child id -> recorded result, from the parent's ``:processed`` hash."""
    return as_dict(await conn.hgetall(keyspace.processed_key(queue, parent_id)))


async def dependencies(conn: Conn, queue: str, parent_id: str) -> int:
    """Outstanding children (``:dependencies``); 0 when the counter is absent."""
    return as_int(await conn.get(keyspace.dependencies_key(queue, parent_id)))


async def ignored_failures(conn: Conn, queue: str, parent_id: str) -> dict[str, str]:
    """Child id -> error, for children that died under the ignore policy."""
    return as_dict(await conn.hgetall(keyspace.ignored_key(queue, parent_id)))
