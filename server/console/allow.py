"""The allowlist: every command the console sends (reads or writes, where its keys are, its arity,
the key type it works on: the widgets read a key of the grammar as its type), and why others are refused."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Access = Literal["read", "write"]
# first: the first argument is the key; all: every argument is a key;
# numkeys: the first argument counts the keys that follow (scripts, EMQ.*).
KeysAt = Literal["first", "all", "numkeys", "none"]


# Why a line was refused: not a command (400), not one it sends (403), past the budget (409),
# a script stopped past its time (422), the console closed or Valkey unable to take it (503).
Reason = Literal["bad-line", "not-allowed", "read-only", "over-budget", "stopped", "busy", "closed", "unavailable"]
_BY_STATUS: dict[int, Reason] = {400: "bad-line", 403: "not-allowed", 409: "over-budget", 503: "unavailable"}


class Refusal(Exception):
    """A line the console will not run; nothing of it was written."""

    def __init__(self, status: int, message: str, reason: Reason | None = None) -> None:
        super().__init__(message)
        self.status, self.message = status, message
        self.reason: Reason = reason or _BY_STATUS.get(status, "not-allowed")


@dataclass(frozen=True)
class Rule:
    name: str
    access: Access
    keys: KeysAt
    least: int  # arguments after the command name, at least
    most: int  # ... and at most
    shape: str | None = None  # the key type it works on (None: any)
    status: bool = False  # answers a status line, printed bare (OK, hash, PONG)


def _rules(access: Access, keys: KeysAt, shape: str | None, spec: str) -> list[Rule]:
    """`spec`: 'NAME:least-most ...'; a trailing '!' marks a status reply."""
    found = []
    for item in spec.split():
        name, _, span = item.partition(":")
        status = span.endswith("!")
        low, _, high = span.rstrip("!").partition("-")
        found.append(Rule(name, access, keys, int(low), int(high or low), shape, status))
    return found


RULES: dict[str, Rule] = {
    rule.name: rule
    for rule in [
        *_rules("read", "first", "string", "GET:1 STRLEN:1"),
        *_rules("read", "first", "hash", "HGET:2 HGETALL:1 HMGET:2-64 HLEN:1 HEXISTS:2 HKEYS:1 HVALS:1"),
        *_rules("read", "first", "zset", "ZRANGE:3-9 ZREVRANGE:3-4 ZRANGEBYSCORE:3-8 ZSCORE:2 ZMSCORE:2-64 "
                                         "ZCARD:1 ZRANK:2-3 ZREVRANK:2-3 ZCOUNT:3"),
        *_rules("read", "first", "list", "LRANGE:3 LLEN:1 LINDEX:2"),
        *_rules("read", "first", None, "TYPE:1! TTL:1 PTTL:1"),
        *_rules("read", "all", None, "EXISTS:1-16"),
        *_rules("read", "none", None, "PING:0-1! SCAN:1-7 KEYS:1"),
        *_rules("write", "first", "string", "SET:2-6! INCR:1 DECR:1 INCRBY:2 DECRBY:2"),
        *_rules("write", "first", "hash", "HSET:3-63 HSETNX:3 HDEL:2-64 HINCRBY:3"),
        *_rules("write", "first", "zset", "ZADD:3-63 ZREM:2-64 ZINCRBY:3 ZPOPMIN:1-2"),
        *_rules("write", "first", "list", "LPUSH:2-64 RPUSH:2-64 LPOP:1-2 RPOP:1-2 LREM:3"),
        *_rules("write", "first", None, "EXPIRE:2-3 PEXPIRE:2-3 PERSIST:1"),
        *_rules("write", "all", None, "DEL:1-16"),
        *_rules("write", "numkeys", None, "EVALSHA:2-64 EMQ.COMPLETE:1-64 EMQ.FAIL:1-64"),
    ]
}


def _each(names: str, reason: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), reason)


REASONS: dict[str, str] = {
    **_each("EVAL EVAL_RO EVALSHA_RO FCALL FCALL_RO FUNCTION SCRIPT", "it runs Lua of your own; the console runs "
            "the course's scripts by name (e.g. complete, claim) or EVALSHA of their SHA"),
    **_each("CONFIG MODULE DEBUG CLIENT INFO ACL AUTH CLUSTER SAVE BGSAVE BGREWRITEAOF REPLICAOF SLAVEOF FAILOVER "
            "SWAPDB SELECT OBJECT MEMORY LATENCY SLOWLOG", "it changes or reveals the whole server, not your sandbox"),
    **_each("MONITOR SUBSCRIBE PSUBSCRIBE SSUBSCRIBE BLPOP BRPOP BZPOPMIN WAIT", "it would hold the console's "
            "connection open"),
    **_each("FLUSHALL FLUSHDB", "it would delete every visitor's keys, not only yours"),
    "SHUTDOWN": "it would stop the server for everyone",
    "MULTI": "transactions span commands the console checks one by one",
    "PUBLISH": "the lab's own events travel on the server's channels",
    "SORT": "its BY and GET patterns read keys the console cannot check",
    "MIGRATE": "it moves keys to another server", "RESTORE": "it writes raw key dumps",
    "DUMP": "it reads raw key dumps; read the key with its own command",
    "RENAME": "a renamed key could leave your sandbox", "COPY": "a copied key could leave your sandbox",
}


def rule_for(args: list[str]) -> Rule:
    """The rule of command `args[0]` (any case), its arguments counted; `Refusal` when not allowed."""
    name, count = args[0], len(args) - 1
    rule = RULES.get(name.upper())
    if rule is None:
        shown = name if len(name) <= 40 and name.isprintable() else name[:40].encode("unicode_escape").decode() + "…"
        if (reason := REASONS.get(name.upper())) is not None:
            raise Refusal(403, f"{shown.upper()} is refused: {reason}.")
        raise Refusal(403, f"{shown} is not a command the console runs. It runs: {', '.join(sorted(RULES))}, "
                           "and the course's scripts by name.")
    if not rule.least <= count <= rule.most:
        want = str(rule.least) if rule.least == rule.most else f"{rule.least} to {rule.most}"
        raise Refusal(400, f"{rule.name} takes {want} arguments here; got {count}.")
    return rule
