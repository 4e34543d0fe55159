"""The Valkey client the site talks through: `Redis` for one server, `RedisCluster` for a
cluster (asked with `EMQLAB_VALKEY_CLUSTER=1`, or found by `INFO cluster`).

A script that holds Valkey past `busy-reply-threshold` makes it answer other commands `BUSY …`
(no redis-py class of its own). SCRIPT KILL ends a script that has not written (`OK`); one that
has is `UNKILLABLE`; `NOTBUSY`: none runs. The console's and the graders' watchdogs ask through
`ask_script_kill`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import hiredis
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from server.emq.wire import Conn
from server.settings import truth

log = logging.getLogger("emqlab.connect")

CLUSTER_ENV = "EMQLAB_VALKEY_CLUSTER"
MAX_CONNECTIONS = 2048  # above any limit_concurrency the site is served with (server/cli.py)
# The managed Valkey's `busy-reply-threshold`; the site's own scripts take a few ms.
BUSY_REPLY_MS = 200


def wants_cluster(url: str, cluster: bool | None = None) -> bool:
    """Asked for (argument, then EMQLAB_VALKEY_CLUSTER: 1 or 0), else whether the node the URL
    names runs with cluster mode on."""
    if cluster is None:
        cluster = truth(os.environ.get(CLUSTER_ENV, ""))
    if cluster is not None:
        return cluster
    try:
        with redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=2, socket_timeout=2) as client:
            return int(client.info("cluster").get("cluster_enabled", 0)) == 1
    except (redis.RedisError, OSError, ValueError) as exc:
        log.warning("cannot tell whether %s is a cluster (%s): assuming one server", url, exc)
        return False


class PackedConnection(aioredis.Connection):
    """redis-py's async connection, its commands packed by hiredis in C (packing in
    Python was a tenth of a click's CPU)."""

    def pack_command(self, *args: Any) -> list[bytes]:
        # redis-py sends a command name written with a space ("CONFIG GET") as two words
        if isinstance(args[0], str) and " " in args[0]:
            args = (*args[0].split(), *args[1:])
        return [hiredis.pack_command(args)]


def open_client(url: str, cluster: bool | None = None) -> aioredis.Redis | RedisCluster:
    """The site's async client (decode_responses=True)."""
    if wants_cluster(url, cluster):
        # One pool per node; a MOVED or a node gone refreshes its slot map by itself.
        # A cluster has database 0 only; `redis://h:p/0` is fine, drop anything else.
        parts = urlsplit(url)
        return RedisCluster.from_url(parts._replace(path="").geturl() if parts.path not in ("", "/", "/0") else url,
                                     decode_responses=True, socket_connect_timeout=1, socket_timeout=5,
                                     health_check_interval=10, driver_info=None)
    # A plain pool sized above uvicorn's limit_concurrency (a BlockingConnectionPool's
    # checkout cost an eighth of an action's CPU). One retry: after a Valkey restart a
    # dead pooled socket must not lose the command. socket_timeout=None (redis-py 8's
    # default 5 s is a task per send): a request has one deadline (web/middleware.py).
    # driver_info=None: no CLIENT SETINFO, which reads package metadata per connection.
    pool = aioredis.ConnectionPool.from_url(
        url, decode_responses=True, socket_connect_timeout=1, socket_timeout=None, driver_info=None,
        max_connections=MAX_CONNECTIONS,
        # hiredis packing on plain TCP; TLS and unix sockets keep redis-py's own classes
        **({"connection_class": PackedConnection} if urlsplit(url).scheme == "redis" else {}),
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    )
    return aioredis.Redis.from_pool(pool)  # the client owns the pool: aclose() closes it


async def primaries(conn: Conn) -> list[ClusterNode | None]:
    """Every primary of a cluster (its slot map loaded first); [None] for one server."""
    if not isinstance(conn, RedisCluster):
        return [None]
    await conn.initialize()
    return list(conn.get_primaries())


async def command_on(conn: Conn, node: ClusterNode | None, *args: Any) -> Any:
    """A command sent to `node` (None: one server, or a cluster's default node)."""
    if isinstance(conn, RedisCluster):
        return await conn.execute_command(*args, target_nodes=node or conn.get_default_node())
    return await conn.execute_command(*args)  # type: ignore[no-untyped-call]  # untyped in redis-py


def node_of(conn: Conn, key: str) -> str | None:
    """"host:port" of the primary holding `key`'s slot (None on one server)."""
    if not isinstance(conn, RedisCluster):
        return None
    try:
        node = conn.get_node_from_key(key)
    except Exception:  # noqa: BLE001 - the slot map is not loaded yet
        return None
    return node.name if node is not None else None


def is_busy(exc: BaseException | None) -> bool:
    """Valkey's BUSY reply, alone or as redis-py words it for a pipeline ("… caused error: BUSY …")."""
    text = str(exc) if isinstance(exc, ResponseError) else ""
    return text.startswith("BUSY ") or "caused error: BUSY " in text


async def ask_script_kill(conn: Conn, seconds: float, node: ClusterNode | None = None) -> str | None:
    """SCRIPT KILL's answer on `node` ('OK', 'UNKILLABLE', 'NOTBUSY'); None when none came in `seconds`."""
    try:
        await asyncio.wait_for(command_on(conn, node, "SCRIPT", "KILL"), max(seconds, 0.01))
    except ResponseError as exc:
        return str(exc).split(" ", 1)[0]
    except (TimeoutError, RedisError, OSError):
        return None
    return "OK"


# redis-py's asyncio client can swallow a cancellation that lands mid-connect (redis-py issues 2028, 2551;
# here 4 of 60 stops of a reconnecting subscriber, which then ran for ever): a task is cancelled again
# until it has ended.
CANCEL_AGAIN = 0.1  # seconds a stopping task has to end before it is cancelled again


async def stop_tasks(tasks: Iterable[asyncio.Task[Any] | None]) -> None:
    """Cancel the site's background tasks (None is skipped) and return once each has ended, whatever it
    raised. The caller's own cancellation still propagates through `asyncio.wait`."""
    pending = {task for task in tasks if task is not None}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN)
