"""A race's workers, apart from what they do (`race_run`): their connections, each its own, named
for its worker and queue, never opened again once closed, and killed on Valkey's side by a Reset
(`fence`) from any site process; and the recorded run's `Turns`, which orders them in the seed's time."""

from __future__ import annotations

import asyncio
import heapq
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import ConnectionPool, Redis, RedisCluster
from redis.asyncio.connection import AbstractConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as Disconnected

from server.emq import keyspace
from server.emq.wire import Conn, text
from server.valkey.client import command_on


@dataclass
class Turns:
    """The seed's own clock: one worker moves at a time, the one whose pause ends first in
    the seed's time (ties by number), so the timeline is the same whatever the machine's load."""
    moving: int  # the workers between two pauses: all of them, before each first waits its turn
    now: float = 0.0
    parked: list[tuple[float, int, asyncio.Future[None]]] = field(default_factory=list)

    async def pause(self, number: int, seconds: float) -> None:
        woken = asyncio.get_running_loop().create_future()
        heapq.heappush(self.parked, (self.now + seconds, number, woken))
        self.stopped()
        await woken

    def stopped(self) -> None:
        """A worker paused or ended: once none moves, the next in the seed's time goes."""
        self.moving -= 1
        if self.moving == 0 and self.parked:
            self.now, _, woken = heapq.heappop(self.parked)
            self.moving = 1
            if not woken.done():  # cancelled with the run
                woken.set_result(None)



def worker_name(number: int, queue: str) -> str:
    """A worker's connection name (CLIENT LIST shows it): its number and its queue, which `fence` checks."""
    return f"emqlab-race-w{number}@{queue}"


async def fence(conn: Conn, queue: str, clients: list[int]) -> None:
    """Kill the run's worker connections on Valkey's side (the node holding `queue`'s slot).
    A cancelled call may already be on the wire, and a run may be going in another site
    process: once this returns, no worker's command can land, since a killed client's
    unread input dies with it. Only `clients` named as `queue`'s workers go: a Valkey
    restarted since the marker was written gives its IDs to other connections."""
    node = conn.get_node_from_key(keyspace.queue_key(queue, "pending")) if isinstance(conn, RedisCluster) else None
    if not clients:
        return
    listed = text(await command_on(conn, node, "CLIENT", "LIST", "ID", *clients)) or ""
    for line in listed.splitlines():
        fields = dict(pair.split("=", 1) for pair in line.split(" ") if "=" in pair)
        if fields.get("name", "").endswith(f"@{queue}") and fields["name"].startswith("emqlab-race-w"):
            await command_on(conn, node, "CLIENT", "KILL", "ID", fields["id"])


def _opened_once(kind: type[AbstractConnection]) -> type[AbstractConnection]:
    """`kind` that never opens again once closed: redis-py reopens a connection the server
    closed, and a worker whose connection a Reset killed would race on the flow it landed."""

    class OpenedOnce(kind):  # type: ignore[valid-type, misc]
        was_open = False

        async def connect_check_health(self, *args: Any, **kwargs: Any) -> None:
            if not self.is_connected:
                if self.was_open:
                    raise Disconnected("a race worker's connection is not opened again")
                await super().connect_check_health(*args, **kwargs)
                self.was_open = True

    return OpenedOnce


def own_connection(conn: Conn, key: str, name: str) -> Redis:
    """A connection of the worker's own (named `name`), to the node holding the race's slot."""
    kind: type[AbstractConnection]
    if isinstance(conn, RedisCluster):
        node = conn.get_node_from_key(key)
        assert node is not None
        kind, kwargs = node.connection_class, {**node.connection_kwargs, "host": node.host, "port": node.port}
    else:
        kind, kwargs = conn.connection_pool.connection_class, dict(conn.connection_pool.connection_kwargs)
    # no retry: a connection a Reset killed (`fence`) stops its worker at once
    kwargs.update(client_name=name, decode_responses=True, retry=Retry(NoBackoff(), 0))
    own = ConnectionPool(connection_class=_opened_once(kind), max_connections=1, **kwargs)
    return Redis.from_pool(own)  # the client owns its pool: closing it closes the connection
