"""The per-run Valkey user: Valkey itself confines a learner's script.

The run's id is in every key's hashtag and the user has that one key pattern (``~emq:{<run>.*``).
Commands are granted by category, then keyless, server-wide, key-moving (SELECT, MOVE, COPY…),
blocking and pub/sub ones are denied; of scripting only EVALSHA stays (the admin loads the script).
"""

from __future__ import annotations

import contextlib
import secrets
import string
from typing import Final

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from server.exercises.runkeys import run_pattern, sweep

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
    # name as the site's sandbox users deny them (server/console/as_user.py)
    "-sort", "-sort_ro", "-monitor", "-subscribe", "-psubscribe", "-ssubscribe", "-save", "-bgsave",
    "-replicaof", "-cluster",
)


def new_run_id() -> str:
    """``r`` + 10 random characters: a queue-name part no other run will hold."""
    return "r" + "".join(secrets.choice(_ALPHABET) for _ in range(10))


def no_retry() -> Retry:
    """A client that fails at once: a grader that died must not be retried in silence."""
    return Retry(NoBackoff(), 0)


class RunUser:
    """One run's user on one grader: created, connected, then deleted."""

    def __init__(self, admin: Redis, host: str, port: int) -> None:
        self.admin = admin
        self.host, self.port = host, port
        self.run_id = new_run_id()
        self.name = f"run-{self.run_id}"
        self.password = secrets.token_urlsafe(18)
        self.client: Redis | None = None

    async def open(self) -> Redis:
        """Create the user (``reset`` first: nothing inherited) and a connection that runs as it."""
        await self.admin.execute_command(  # type: ignore[no-untyped-call]
            "ACL", "SETUSER", self.name, "reset", "on", f">{self.password}",
            f"~{run_pattern(self.run_id)}", "resetchannels", "-@all", *GRANTED, *DENIED,
        )
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

    async def close(self, lost: bool = False) -> None:
        """Drop the connection, then the user, then the run's keys (a key swept while the user
        could still write would come back); ``lost``: the grader's process took both with it."""
        if self.client is not None:
            with contextlib.suppress(RedisError, OSError):
                await self.client.aclose()
            self.client = None
        if not lost:
            await self.admin.acl_deluser(self.name)
            await sweep(self.admin, run_pattern(self.run_id))
