"""Each sandbox's own Valkey ACL user: its rules, its password, making and dropping it.

The sandbox boundary is Valkey's to enforce, not only the console's: user
``sbx-<sandbox>`` may touch keys matching ``emq:{<sandbox>.*`` and nothing
else (no ``lab:`` key, no pub/sub channel), and runs only the commands the
course needs. Why one pattern for the whole sandbox rather than one per queue:
it is the very pattern a sandbox reset or the reaper matches, so whatever the
user could write, the reset removes; it never goes stale when the widgets'
queues change (a user made before a deploy would lack a new queue's pattern);
and which queues inside the sandbox a line may write is the console's
concern, decided with better words than NOPERM. The first ``{`` of such a
key is the one after ``emq:``, so its cluster hashtag starts with
``<sandbox>.`` too: whatever the user writes is named in its own sandbox.

Nothing is stored: the password is an HMAC of the site's secret and the
sandbox id, and a user is made with ``ACL SETUSER`` the first time its AUTH
fails on a node (ACL users live in the server's memory: a restart, a
failover or another cluster node simply has none yet).

Why a connection never runs a line as the wrong user (server/console/as_user.py
does the running): a failed AUTH leaves a connection as whoever it was
before. So between two lines a connection rests as ``emqlab-idle``, a user
with no key and no command, and each line is one round trip of
``AUTH <user>``, the command, ``AUTH emqlab-idle``. If the first AUTH fails,
the command runs as the idle user and is refused; if the last one fails, the
connection is dropped rather than pooled.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any, Final

from redis.asyncio.cluster import ClusterNode, RedisCluster
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

PREFIX: Final = "sbx-"
IDLE_USER: Final = "emqlab-idle"
# What a sandbox's user runs: the console's reads and writes of the key
# grammar's types, the course's scripts by SHA and the EMQ module's
# commands, plus what those scripts and the module call inside (TIME for
# the clock, EXISTS, HSETNX, ...): Valkey checks every call of a script or of
# the module (its `C` flag) against this same list.
COMMANDS: Final = (
    "ping", "time", "type", "ttl", "pttl", "exists", "get", "strlen", "set", "incr", "decr", "incrby",
    "decrby", "hget", "hgetall", "hmget", "hlen", "hexists", "hkeys", "hvals", "hset", "hsetnx", "hdel",
    "hincrby", "zrange", "zrevrange", "zrangebyscore", "zscore", "zmscore", "zcard", "zrank", "zrevrank",
    "zcount", "zadd", "zrem", "zincrby", "zpopmin", "lrange", "llen", "lindex", "lpush", "rpush", "lpop",
    "rpop", "lrem", "expire", "pexpire", "persist", "del", "evalsha", "emq.complete", "emq.fail",
)
# Denied by name although `-@all` already denies them: key patterns cannot
# confine a command without keys (KEYS, SCAN and RANDOMKEY list every
# sandbox's keys, FLUSHALL and FLUSHDB delete them), and the rest change or
# reveal the server. Named, they stay denied even if a category is ever
# added to the rules, and ACL GETUSER shows the decision.
DENIED: Final = (
    "keys", "scan", "randomkey", "flushall", "flushdb", "config", "script", "function", "eval", "eval_ro",
    "fcall", "fcall_ro", "debug", "acl", "module", "shutdown", "migrate", "client", "object", "memory",
    "info", "monitor", "subscribe", "psubscribe", "publish", "sort", "rename", "copy", "move", "restore",
    "dump", "select", "swapdb", "cluster", "save", "bgsave", "replicaof", "multi", "wait",
)
# Error replies that pass by themselves: a server loading its data, a cluster
# between two slot maps. Any other refusal of ACL SETUSER (NOPERM, an unknown
# command or rule on an older server) means the site may not make users here.
PASSING: Final = (BusyLoadingError, ClusterDownError, MasterDownError, TryAgainError)
CLOSED_FOR: Final = 30.0  # seconds a node that refused ACL SETUSER is not asked again


class Closed(Exception):
    """The site may not make ACL users on this Valkey: the console is closed here."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def user_of(sandbox: str) -> str:
    return PREFIX + sandbox


def _secret_bytes(secret: str | bytes) -> bytes:
    return secret if isinstance(secret, bytes) else secret.encode()


def password_of(secret: str | bytes, name: str) -> str:
    """The password of ACL user `name`: derived, so never stored anywhere."""
    return hmac.new(_secret_bytes(secret), b"emqlab-acl:" + name.encode(), hashlib.sha256).hexdigest()


def _hashed(secret: str | bytes, name: str) -> str:
    # `#<sha256>` rather than `>password`: the password itself never travels
    # in an ACL SETUSER that SLOWLOG or MONITOR could show.
    return "#" + hashlib.sha256(password_of(secret, name).encode()).hexdigest()


def sandbox_rules(sandbox: str, secret: str | bytes) -> list[str]:
    """ACL SETUSER rules of the sandbox's user (`reset` first: the same result
    whatever the user held before)."""
    return [
        "reset", "on", _hashed(secret, user_of(sandbox)), "resetchannels", f"~emq:{{{sandbox}.*",
        "-@all", *(f"+{c}" for c in COMMANDS), *(f"-{c}" for c in DENIED),
    ]


def idle_rules(secret: str | bytes) -> list[str]:
    """The idle user: no key, no channel, no command but SELECT (a connection
    to a database other than 0 selects it right after its AUTH)."""
    return ["reset", "on", _hashed(secret, IDLE_USER), "resetchannels", "-@all", "+select"]


class Users:
    """Makes and removes the ACL users, through the site's admin connection."""

    def __init__(self, admin: Conn, secret: str | bytes) -> None:
        self.admin = admin
        self.secret = secret
        self._closed: dict[str, tuple[float, str]] = {}  # node name -> (until, reason)

    async def _on(self, node: ClusterNode | None, *args: Any) -> Any:
        if isinstance(self.admin, RedisCluster):
            return await self.admin.execute_command(*args, target_nodes=node or self.admin.get_default_node())
        return await self.admin.execute_command(*args)  # type: ignore[no-untyped-call]  # untyped in redis-py

    async def _set(self, node: ClusterNode | None, name: str, rules: list[str]) -> None:
        where = node.name if node is not None else ""
        until, reason = self._closed.get(where, (0.0, ""))
        if time.monotonic() < until:
            raise Closed(reason)
        try:
            await self._on(node, "ACL", "SETUSER", name, *rules)
        except PASSING:
            raise  # the server is starting or moving slots: a fault for now, not a closed console
        except ResponseError as exc:
            reason = (f"the site may not create Valkey ACL users on this server ({reply.error_text(exc)}), "
                      "and every console line runs as its sandbox's own user")
            self._closed[where] = (time.monotonic() + CLOSED_FOR, reason)
            raise Closed(reason) from exc

    async def make(self, sandbox: str, node: ClusterNode | None = None) -> None:
        """ACL SETUSER of the sandbox's user on `node` (the one server: None)."""
        await self._set(node, user_of(sandbox), sandbox_rules(sandbox, self.secret))

    async def make_idle(self, node: ClusterNode | None = None) -> None:
        await self._set(node, IDLE_USER, idle_rules(self.secret))

    async def load_script(self, source: str, node: ClusterNode | None) -> None:
        """SCRIPT LOAD as the site: the sandbox users may not (SCRIPT is denied)."""
        await self._on(node, "SCRIPT", "LOAD", source)

    async def drop(self, sandbox: str) -> None:
        await drop_user(self.admin, sandbox)

    async def probe(self) -> str | None:
        """Make the idle user on every primary now: None when the site may,
        else the reason the console is closed here (for the start-up log)."""
        try:
            if isinstance(self.admin, RedisCluster):
                await self.admin.initialize()
                for node in self.admin.get_primaries():
                    await self.make_idle(node)
            else:
                await self.make_idle()
        except Closed as exc:
            return exc.reason
        except RedisError as exc:
            return f"Valkey did not answer ({exc})"
        return None


async def drop_user(admin: Conn, sandbox: str) -> None:
    """ACL DELUSER of the sandbox's user on every primary: the reaper's call
    when a sandbox goes (a user that is not there is not an error). Valkey
    closes connections authenticated as it; the console's rest as the idle
    user between lines, so none of its connections is among them."""
    if isinstance(admin, RedisCluster):
        await admin.initialize()
        for node in admin.get_primaries():
            await admin.execute_command("ACL", "DELUSER", user_of(sandbox), target_nodes=node)
    else:
        await admin.execute_command("ACL", "DELUSER", user_of(sandbox))  # type: ignore[no-untyped-call]
