"""The per-run Valkey user: Valkey itself confines a learner's script.

Each run gets a fresh id (``r`` + 10 of ``[a-z0-9]``) that sits inside every
queue name of the run, and so inside every key's hashtag. The script runs as
a user created for that run alone whose only key pattern is the run's
(``~emq:{<run>.*``): a ``redis.call`` on any other key — another run's, a
sentinel, anything — is refused by Valkey with an ACL failure, whatever the
script does, and no check on the Python side is needed for it.

Commands are granted by category (the data types, the keyspace verbs, TIME),
then the dangerous ones are taken away: everything that works on no key or
on the whole server (FLUSHALL, FLUSHDB, KEYS, SCAN, RANDOMKEY, DBSIZE,
CONFIG, SCRIPT, FUNCTION, DEBUG, SHUTDOWN, ACL, MODULE, CLIENT, INFO …), the
ones that would carry a run's key out of reach of the sweep (SELECT, MOVE,
COPY, SWAPDB, MIGRATE), blocking and pub/sub. The user may call EVALSHA and
nothing else of the scripting family: the admin loads the script, the user
runs it.

The user is deleted after the run (Valkey closes its connection then) and
the run's keys are swept by the admin.
"""

from __future__ import annotations

import secrets
import string
from typing import Final

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from server.exercises.runkeys import RunKeys, run_pattern

_ALPHABET: Final = string.ascii_lowercase + string.digits

GRANTED: Final = (
    "+@string", "+@hash", "+@list", "+@set", "+@sortedset", "+@bitmap", "+@hyperloglog",
    "+@geo", "+@stream", "+@keyspace", "+time", "+ping", "+echo", "+evalsha",
)
DENIED: Final = (
    "-@dangerous", "-@admin", "-@blocking", "-@pubsub", "-@scripting", "+evalsha",
    "-keys", "-scan", "-randomkey", "-dbsize", "-flushall", "-flushdb", "-select", "-swapdb",
    "-move", "-copy", "-migrate", "-restore", "-wait", "-waitaof", "-memory", "-lolwut",
    "-object", "-client", "-info", "-config", "-debug", "-shutdown", "-acl", "-module",
    "-script", "-function", "-eval", "-fcall", "-fcall_ro", "-eval_ro", "-evalsha_ro",
    # SORT's BY/GET read keys by pattern; the rest are server-wide, denied by
    # name as the site's sandbox users deny them (server/valkey/acl.py)
    "-sort", "-sort_ro", "-monitor", "-subscribe", "-psubscribe", "-ssubscribe", "-save", "-bgsave",
    "-replicaof", "-cluster",
)


def new_run_id() -> str:
    """``r`` + 10 random characters: a queue-name part no other run will hold."""
    return "r" + "".join(secrets.choice(_ALPHABET) for _ in range(10))


def user_name(run_id: str) -> str:
    return f"run-{run_id}"


def user_rules(run_id: str, password: str) -> list[str]:
    """The ACL SETUSER arguments of the run's user (``reset`` first: nothing inherited)."""
    return [
        "reset", "on", f">{password}",
        f"~{run_pattern(run_id)}", "resetchannels",
        "-@all", *GRANTED, *DENIED,
    ]


def no_retry() -> Retry:
    """A client that fails at once: a grader that died must not be retried in silence."""
    return Retry(NoBackoff(), 0)


class RunUser:
    """One run's user on one grader: created, connected, then deleted."""

    def __init__(self, keys: RunKeys, host: str, port: int, run_id: str) -> None:
        self.keys = keys
        self.admin = keys.admin
        self.host, self.port = host, port
        self.run_id = run_id
        self.name = user_name(run_id)
        self.password = secrets.token_urlsafe(18)
        self.client: Redis | None = None

    async def open(self) -> Redis:
        """Create the user and a connection that runs as it."""
        rules = user_rules(self.run_id, self.password)
        await self.admin.execute_command("ACL", "SETUSER", self.name, *rules)  # type: ignore[no-untyped-call]
        self.client = Redis(
            host=self.host, port=self.port, username=self.name, password=self.password,
            # a pool, not a single connection: the grader's timed call is a
            # pipeline, which redis-py takes from the pool (it keeps one idle)
            retry=no_retry(), socket_connect_timeout=2,
            # No CLIENT SETINFO: the user may not run it, and it would cost a reply.
            driver_info=None,
        )
        await self.client.ping()
        return self.client

    async def close(self) -> None:
        """Drop the connection, the user, then the run's keys (in that order:
        a key swept while the user could still write would come back)."""
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        await self.admin.acl_deluser(self.name)
        await self.keys.sweep(run_pattern(self.run_id))
