"""Each sandbox's own Valkey ACL user, and one command run as it in one round trip.

User ``sbx-<sandbox>`` reaches keys ``emq:{<sandbox>.*`` only (what a reset removes); its password is
an HMAC of the site's secret, and it is made when its AUTH first fails on a node. Without the EMQ
module the module's commands are left out of its rules.

A line is sent as `AUTH sbx-<sandbox>`, the command, `AUTH emqlab-idle` (pooled connections rest as
the idle user). A first AUTH that fails makes the user and sends the line again, as does a MOVED; a
last AUTH that fails drops the connection. Replies are RESP2, undecoded; an error reply is returned,
not raised.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Sequence
from typing import Any, Final, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection, SSLConnection, UnixDomainSocketConnection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ClusterDownError,
    ConnectionError,
    MasterDownError,
    MovedError,
    NoScriptError,
    RedisError,
    ResponseError,
    TryAgainError,
)

from server.console.allow import RULES
from server.emq.wire import Conn
from server.valkey import reply
from server.valkey.client import command_on, primaries

PREFIX: Final = "sbx-"
IDLE_USER: Final = "emqlab-idle"
# The console's commands (SCAN and KEYS run as the site, over the sandbox's own keys), and TIME, which
# the scripts call (what they and the module call inside is checked too); EMQ.* where the module is loaded.
_OWN: Final = [name.lower() for name in RULES if name not in ("SCAN", "KEYS")]
COMMANDS: Final = ("time", *(name for name in _OWN if not name.startswith("emq.")))
MODULE_COMMANDS: Final = tuple(name for name in _OWN if name.startswith("emq."))
# Denied by name besides `-@all`: keyless commands stay denied if a category is ever added.
DENIED: Final = (
    "keys", "scan", "randomkey", "flushall", "flushdb", "config", "script", "function", "eval", "eval_ro",
    "fcall", "fcall_ro", "debug", "acl", "module", "shutdown", "migrate", "client", "object", "memory",
    "info", "monitor", "subscribe", "psubscribe", "publish", "sort", "rename", "copy", "move", "restore",
    "dump", "select", "swapdb", "cluster", "save", "bgsave", "replicaof", "multi", "wait",
)
# Passing error replies; any other refusal of ACL SETUSER closes the console here.
PASSING: Final = (BusyLoadingError, ClusterDownError, MasterDownError, TryAgainError)
CLOSED_FOR: Final = 30.0  # seconds a node that refused ACL SETUSER is not asked again
NO_MODULE_FOR: Final = 30.0  # seconds a node found without the module makes users without its commands
Arg = str | bytes | int | float
# Carried over from the site's connection: where the node is, never who it is nor how replies decode.
_CARRIED: Final = frozenset({"host", "port", "db", "path", "socket_timeout", "socket_connect_timeout",
                             "socket_keepalive", "socket_keepalive_options", "socket_type"})
# They change what a connection is: a pooled connection must stay one AUTH away from idle.
_STATEFUL: Final = frozenset({"AUTH", "HELLO", "RESET", "SELECT", "MULTI", "EXEC", "WATCH", "CLIENT", "QUIT",
                              "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "MONITOR", "READONLY", "READWRITE"})


class Closed(Exception):
    """The site may not make ACL users on this Valkey: the console is closed here (why: its text)."""


def user_of(sandbox: str) -> str:
    return PREFIX + sandbox


def password_of(secret: str | bytes, name: str) -> str:
    """The password of ACL user `name`: derived, so never stored anywhere."""
    key = secret if isinstance(secret, bytes) else secret.encode()
    return hmac.new(key, b"emqlab-acl:" + name.encode(), hashlib.sha256).hexdigest()


def _hashed(secret: str | bytes, name: str) -> str:
    # `#<sha256>`, not `>password`: SLOWLOG or MONITOR never show the password
    return "#" + hashlib.sha256(password_of(secret, name).encode()).hexdigest()


def sandbox_rules(sandbox: str, secret: str | bytes, module: bool = True) -> list[str]:
    """ACL SETUSER rules of the sandbox's user; `module`: the EMQ module's commands too."""
    allowed = (*COMMANDS, *MODULE_COMMANDS) if module else COMMANDS
    return [
        "reset", "on", _hashed(secret, user_of(sandbox)), "resetchannels", f"~emq:{{{sandbox}.*",
        "-@all", *(f"+{c}" for c in allowed), *(f"-{c}" for c in DENIED),
    ]


def idle_rules(secret: str | bytes) -> list[str]:
    """The idle user: nothing but SELECT (a connection to another database selects it after AUTH)."""
    return ["reset", "on", _hashed(secret, IDLE_USER), "resetchannels", "-@all", "+select"]


class Runner:
    """Makes the sandboxes' ACL users and runs commands as them; `admin`, the site's connection,
    makes the users, loads scripts, and knows which node owns a slot."""

    def __init__(self, admin: Conn, secret: str | bytes, *, max_connections: int = 16, timeout: float = 5.0) -> None:
        self.admin = admin
        self.secret = secret
        self.max_connections = max_connections
        self.timeout = timeout
        self._pools: dict[str, aioredis.BlockingConnectionPool] = {}
        self._closed: dict[str, tuple[float, str]] = {}  # node name -> (until, reason)
        self._no_module: dict[str, float] = {}  # node name -> until when it is taken to have no EMQ module

    async def call(self, sandbox: str, args: Sequence[Arg], key: str | None) -> Any:
        """The reply of `args` as the sandbox's user on the node of `key` (None: any); `Closed`
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
                    raise Closed(f"Valkey refused the sandbox's own user right after making it ({auth})")
                await self.make(sandbox, node)
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
            # `_node` names a cluster's node always: None is the one server's
            site = node if node is not None else cast(aioredis.Redis, self.admin).connection_pool
            cls, settings = site.connection_class, site.connection_kwargs
            plain = next((c for c in (SSLConnection, UnixDomainSocketConnection) if issubclass(cls, c)), Connection)
            pool = aioredis.BlockingConnectionPool(
                connection_class=plain, max_connections=self.max_connections, timeout=self.timeout,
                username=IDLE_USER, password=password_of(self.secret, IDLE_USER),
                protocol=2, decode_responses=False, driver_info=None, health_check_interval=0,
                retry=Retry(NoBackoff(), 0),  # a line is never sent twice by redis-py itself
                **{k: v for k, v in settings.items() if k in _CARRIED or k.startswith("ssl")},
            )
            self._pools[name] = pool
        return pool

    async def _exchange(self, node: ClusterNode | None, sandbox: str, args: Sequence[Arg]) -> tuple[Any, Any]:
        """One round trip: (the first AUTH's reply, the command's reply)."""
        user = user_of(sandbox)
        commands: list[Sequence[Arg]] = [
            ("AUTH", user, password_of(self.secret, user)),
            args,
            ("AUTH", IDLE_USER, password_of(self.secret, IDLE_USER)),
        ]
        pool = self._pool(node)
        conn: AbstractConnection
        try:
            conn = await pool.get_connection()  # type: ignore[no-untyped-call]  # untyped in redis-py
        except AuthenticationError:  # no idle user on this node yet
            await self.make_idle(node)
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

    async def _set(self, node: ClusterNode | None, name: str, rules: list[str]) -> bool:
        """ACL SETUSER; False when it named a module command the server does not have."""
        where = node.name if node is not None else ""
        until, reason = self._closed.get(where, (0.0, ""))
        if time.monotonic() < until:
            raise Closed(reason)
        try:
            await command_on(self.admin, node, "ACL", "SETUSER", name, *rules)
            return True
        except PASSING:
            raise  # the server is starting or moving slots: a fault for now, not a closed console
        except ResponseError as exc:
            text = str(exc).lower()
            if "unknown command" in text and any(f"'+{c}'" in text for c in MODULE_COMMANDS):
                return False
            reason = (f"the site may not create Valkey ACL users on this server ({reply.error_text(exc)}), "
                      "and every console line runs as its sandbox's own user")
            self._closed[where] = (time.monotonic() + CLOSED_FOR, reason)
            raise Closed(reason) from exc

    async def make(self, sandbox: str, node: ClusterNode | None = None) -> None:
        """ACL SETUSER of the sandbox's user on `node` (the one server: None); without the
        module's commands where the server has none (found by its refusal, asked again later)."""
        where = node.name if node is not None else ""
        module = time.monotonic() >= self._no_module.get(where, 0.0)
        if not await self._set(node, user_of(sandbox), sandbox_rules(sandbox, self.secret, module)):
            self._no_module[where] = time.monotonic() + NO_MODULE_FOR
            await self._set(node, user_of(sandbox), sandbox_rules(sandbox, self.secret, module=False))

    async def make_idle(self, node: ClusterNode | None = None) -> None:
        await self._set(node, IDLE_USER, idle_rules(self.secret))

    async def probe(self) -> str | None:
        """Make the idle user on every primary now: None, or why the console is closed here."""
        try:
            for node in await primaries(self.admin):
                await self.make_idle(node)
        except Closed as exc:
            return str(exc)
        except RedisError as exc:
            return f"Valkey did not answer ({exc})"
        return None


class _Unread(ConnectionError):
    """Closed before any reply to the line was read."""


async def _read(conn: AbstractConnection) -> Any:
    """One reply; an error reply (WRONGPASS too) as its exception, the connection kept (read whole)."""
    try:
        return await conn.read_response(disconnect_on_error=False)
    except (ResponseError, AuthenticationError) as exc:
        return exc


async def drop_user(admin: Conn, sandbox: str) -> None:
    """ACL DELUSER of the sandbox's user on every primary (a missing user is no error).
    Valkey closes connections authenticated as it: the console's rest as the idle user."""
    for node in await primaries(admin):
        await command_on(admin, node, "ACL", "DELUSER", user_of(sandbox))
