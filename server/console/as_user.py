"""One command run as a sandbox's Valkey ACL user, in one round trip: `AUTH sbx-<sandbox>`, the
command, `AUTH emqlab-idle` (pooled connections rest as the idle user: server/valkey/acl.py). A
first AUTH that fails makes the user and sends the line again, as does a MOVED; a last AUTH that
fails drops the connection. Replies are RESP2, undecoded; an error reply is returned, not raised.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Final

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection, SSLConnection, UnixDomainSocketConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, ConnectionError, MovedError, NoScriptError, ResponseError

from server.emq.wire import Conn
from server.valkey import acl
from server.valkey.client import command_on

Arg = str | bytes | int | float
# Carried over from the site's connection: where the node is, never who it is nor how replies decode.
_CARRIED: Final = frozenset({"host", "port", "db", "path", "socket_timeout", "socket_connect_timeout",
                             "socket_keepalive", "socket_keepalive_options", "socket_type"})
# They change what a connection is: a pooled connection must stay one AUTH away from idle.
_STATEFUL: Final = frozenset({"AUTH", "HELLO", "RESET", "SELECT", "MULTI", "EXEC", "WATCH", "CLIENT", "QUIT",
                              "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR", "READONLY", "READWRITE"})


class Runner:
    """Runs commands as sandboxes' ACL users; `admin`, the site's connection, makes the users,
    loads scripts, and knows which node owns a slot."""

    def __init__(self, admin: Conn, secret: str | bytes, *, max_connections: int = 16, timeout: float = 5.0) -> None:
        self.admin = admin
        self.secret = secret
        self.users = acl.Users(admin, secret)
        self.max_connections = max_connections
        self.timeout = timeout
        self._pools: dict[str, aioredis.BlockingConnectionPool] = {}

    async def call(self, sandbox: str, args: Sequence[Arg], key: str | None) -> Any:
        """The reply of `args` as the sandbox's user on the node of `key` (None: any); `acl.Closed`
        where users cannot be made."""
        name = args[0].decode("utf-8", "replace") if isinstance(args[0], bytes) else str(args[0])
        if name.upper() in _STATEFUL:
            raise ValueError(f"{name} changes the connection itself; it is never run as a sandbox's user")
        node = await self._node(key)
        made = moved = resent = False
        while True:
            try:
                auth, found = await self._exchange(node, sandbox, args)
            except _Unread:
                if resent:
                    raise
                resent = True  # the server closed a pooled connection unread: nothing of the line ran
                continue
            if isinstance(auth, Exception):
                if made:
                    raise acl.Closed(f"Valkey refused the sandbox's own user right after making it ({auth})")
                await self.users.make(sandbox, node)
                made = True
            elif isinstance(found, MovedError) and isinstance(self.admin, RedisCluster) and not moved:
                await self.admin.nodes_manager.initialize()
                node, moved = await self._node(key), True
            else:
                return found

    async def evalsha(self, sandbox: str, source: str, keys: Sequence[str], argv: Sequence[Arg]) -> Any:
        """A script by SHA; on NOSCRIPT the site loads it (SCRIPT is denied to the user) and retries."""
        sha = hashlib.sha1(source.encode()).hexdigest()
        args: list[Arg] = ["EVALSHA", sha, len(keys), *keys, *argv]
        key = keys[0] if keys else None
        found = await self.call(sandbox, args, key)
        if isinstance(found, NoScriptError):
            await command_on(self.admin, await self._node(key), "SCRIPT", "LOAD", source)  # as the site
            found = await self.call(sandbox, args, key)
        return found

    async def aclose(self) -> None:
        for pool in self._pools.values():
            await pool.disconnect()
        self._pools.clear()

    async def _node(self, key: str | None) -> ClusterNode | None:
        if not isinstance(self.admin, RedisCluster):
            return None
        await self.admin.initialize()  # a no-op once the slot map is loaded
        return self.admin.get_node_from_key(key) if key is not None else self.admin.get_default_node()

    def _pool(self, node: ClusterNode | None) -> aioredis.BlockingConnectionPool:
        name = node.name if node is not None else ""
        pool = self._pools.get(name)
        if pool is None:
            cls: type[AbstractConnection]
            if node is not None:
                cls, settings = node.connection_class, node.connection_kwargs
            elif not isinstance(self.admin, RedisCluster):
                site = self.admin.connection_pool
                cls, settings = site.connection_class, site.connection_kwargs
            else:
                raise ValueError("a cluster command needs the node it goes to")
            plain = next((c for c in (SSLConnection, UnixDomainSocketConnection) if issubclass(cls, c)), Connection)
            pool = aioredis.BlockingConnectionPool(
                connection_class=plain, max_connections=self.max_connections, timeout=self.timeout,
                username=acl.IDLE_USER, password=acl.password_of(self.secret, acl.IDLE_USER),
                protocol=2, decode_responses=False, driver_info=None, health_check_interval=0,
                retry=Retry(NoBackoff(), 0),  # a line is never sent twice by redis-py itself
                **{k: v for k, v in settings.items() if k in _CARRIED or k.startswith("ssl")},
            )
            self._pools[name] = pool
        return pool

    async def _exchange(self, node: ClusterNode | None, sandbox: str, args: Sequence[Arg]) -> tuple[Any, Any]:
        """One round trip: (the first AUTH's reply, the command's reply)."""
        user = acl.user_of(sandbox)
        commands: list[Sequence[Arg]] = [
            ("AUTH", user, acl.password_of(self.secret, user)),
            args,
            ("AUTH", acl.IDLE_USER, acl.password_of(self.secret, acl.IDLE_USER)),
        ]
        pool = self._pool(node)
        conn: AbstractConnection
        try:
            conn = await pool.get_connection()  # type: ignore[no-untyped-call]  # untyped in redis-py
        except AuthenticationError:  # no idle user on this node yet
            await self.users.make_idle(node)
            conn = await pool.get_connection()  # type: ignore[no-untyped-call]
        idle = False
        try:
            await conn.send_packed_command(conn.pack_commands(commands))
            try:
                first = await _read(conn)
            except ConnectionError as exc:
                # Valkey closes the connections of a user it deletes (DELUSER of the idle
                # user, a restart): found closed with no reply, the line never ran.
                raise _Unread(str(exc)) from exc
            replies = [first] + [await _read(conn) for _ in commands[1:]]
            idle = not isinstance(replies[2], Exception)
        finally:
            if not idle:  # who it is now is not known: it is not pooled
                await conn.disconnect(nowait=True)
            await pool.release(conn)
        return replies[0], replies[1]


class _Unread(ConnectionError):
    """Closed before any reply to the line was read."""


async def _read(conn: AbstractConnection) -> Any:
    """One reply; an error reply (WRONGPASS too) as its exception, the connection kept (read whole)."""
    try:
        return await conn.read_response(disconnect_on_error=False)
    except (ResponseError, AuthenticationError) as exc:
        return exc
