"""Each sandbox's own Valkey ACL user: its rules, its password, making and dropping it.

User ``sbx-<sandbox>`` reaches keys ``emq:{<sandbox>.*`` only (what a reset
removes); its password is an HMAC of the site's secret, and it is made when its
AUTH first fails on a node. Without the EMQ module the module's commands are
left out of the rules. Between lines a connection rests as ``emqlab-idle``.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Final

from redis.asyncio.cluster import ClusterNode
from redis.exceptions import (
    BusyLoadingError,
    ClusterDownError,
    MasterDownError,
    RedisError,
    ResponseError,
    TryAgainError,
)

from server.emq.wire import Conn
from server.valkey import reply
from server.valkey.client import command_on, primaries

PREFIX: Final = "sbx-"
IDLE_USER: Final = "emqlab-idle"
# The console's commands, plus what the scripts and the module call inside (checked too).
COMMANDS: Final = (
    "ping", "time", "type", "ttl", "pttl", "exists", "get", "strlen", "set", "incr", "decr", "incrby",
    "decrby", "hget", "hgetall", "hmget", "hlen", "hexists", "hkeys", "hvals", "hset", "hsetnx", "hdel",
    "hincrby", "zrange", "zrevrange", "zrangebyscore", "zscore", "zmscore", "zcard", "zrank", "zrevrank",
    "zcount", "zadd", "zrem", "zincrby", "zpopmin", "lrange", "llen", "lindex", "lpush", "rpush", "lpop",
    "rpop", "lrem", "expire", "pexpire", "persist", "del", "evalsha",
)
MODULE_COMMANDS: Final = ("emq.complete", "emq.fail")  # allowed where the EMQ module is loaded
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


class Users:
    """Makes and removes the ACL users, through the site's admin connection."""

    def __init__(self, admin: Conn, secret: str | bytes) -> None:
        self.admin = admin
        self.secret = secret
        self._closed: dict[str, tuple[float, str]] = {}  # node name -> (until, reason)
        self._no_module: dict[str, float] = {}  # node name -> until when it is taken to have no EMQ module

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


async def drop_user(admin: Conn, sandbox: str) -> None:
    """ACL DELUSER of the sandbox's user on every primary (a missing user is no error).
    Valkey closes connections authenticated as it: the console's rest as the idle user."""
    for node in await primaries(admin):
        await command_on(admin, node, "ACL", "DELUSER", user_of(sandbox))
