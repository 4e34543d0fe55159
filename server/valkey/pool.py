"""redis-py's client on one server, with its per-round-trip overhead cut.

A click cost three round trips (two now), and on this stack each one cost about
120 µs of CPU in redis-py against some 50 µs for the socket itself. Two
parts of that were pure bookkeeping the site never uses, and both are
replaced here, keeping redis-py's connections, parser, retry and commands:

* `LeanPool` hands out connections without `BlockingConnectionPool`'s
  condition variable, its `asyncio.timeout` per checkout and its four awaited
  observability recorders; it still waits (up to `timeout`) when every
  connection is busy, and still checks a connection for stale data or a
  closed socket before handing it out (`ensure_connection`).
* `LeanPipeline` reads a pipeline's replies under ONE deadline instead of one
  `asyncio.timeout` per reply, straight from the parser (not through five
  layers of `parse_response` each), and skips the HIMPORT fieldset preflight
  (a redis-py 8 feature the site does not use). Replies go through the same
  response callbacks as before, so every caller reads what it read.

`LeanRedis` is `redis.asyncio.Redis` whose `pipeline()` answers a
`LeanPipeline`. The cluster client keeps redis-py's own classes.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
from collections.abc import Iterable
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.connection import AbstractConnection, Connection
from redis.client import EMPTY_RESPONSE, NEVER_DECODE
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError


class LeanPool(aioredis.ConnectionPool):
    """A connection pool that waits its turn (like `BlockingConnectionPool`)
    at a fraction of the cost per checkout."""

    def __init__(self, *args: Any, timeout: float = 5.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout = timeout  # how long a checkout waits for a busy pool
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def _exhausted(self) -> bool:
        return not self._available_connections and len(self._in_use_connections) >= self.max_connections

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> AbstractConnection:
        if self._exhausted():
            await self._wait_for_one()
        # No await between the check and the take: the event loop runs one
        # task at a time, so nobody else can take the connection in between.
        connection: AbstractConnection = self.get_available_connection()  # type: ignore[no-untyped-call]
        try:
            await self._ready(connection)
        except BaseException:
            await self.release(connection)
            raise
        return connection

    async def _ready(self, connection: AbstractConnection) -> None:
        """redis-py's `ensure_connection`, without its retry wrapper around
        an already open connection: connect a new one; hand out an open one
        only with nothing left unread on it and its socket not closed."""
        if not connection.is_connected:
            await connection.connect()  # type: ignore[no-untyped-call]
            return
        try:
            stale = await connection.can_read()
        except (RedisConnectionError, RedisTimeoutError, OSError):
            stale = True
        if stale:
            await connection.disconnect()
            await connection.connect()  # type: ignore[no-untyped-call]
            if await connection.can_read():
                raise RedisConnectionError("Connection not ready")

    async def _wait_for_one(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        # A released connection wakes one waiter, but a task that never
        # waited may take it first: check again, until the deadline.
        while self._exhausted():
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                raise RedisConnectionError("No connection available.") from None
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: the wake-up goes to the next in line
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def release(self, connection: AbstractConnection) -> None:
        # Not redis-py's: it takes an asyncio lock, dispatches a
        # connection-released event (for re-authenticating credential
        # providers, which the site does not use) and awaits two recorders.
        if connection.should_reconnect():  # type: ignore[no-untyped-call]
            await connection.disconnect()  # still counted in use until it is down
        self.release_now(connection)

    def release_now(self, connection: AbstractConnection) -> None:
        """Give back a connection that needs no disconnecting, without an
        await: nothing can cancel it halfway through the bookkeeping."""
        self._in_use_connections.remove(connection)
        self._available_connections.append(connection)
        self._wake_one()

    def needs_no_wait(self, connection: AbstractConnection) -> bool:
        return not connection.should_reconnect()  # type: ignore[no-untyped-call]


class DeadlineConnection(Connection):
    """redis-py's TCP connection with two costs cut: a pipeline's replies read
    in one go under the caller's deadline (`read_replies`), and a write that
    waits under `asyncio.timeout` rather than `asyncio.wait_for`, which in
    this Python makes a task of its own for every command sent."""

    async def read_replies(self, count: int) -> list[Any]:
        """`count` replies in a row, straight from the parser: an error reply
        comes back as its `ResponseError`, not raised. The caller holds the
        deadline. What redis-py's `read_response` does once per reply (a
        timeout, the host's name formatted for a message that may never be
        raised, the health check's next time) is done once here, its errors
        the same: a lost socket is a ConnectionError and is disconnected."""
        parser: Any = self._parser  # hiredis (or RESP2): both read one reply per call
        replies: list[Any] = []
        try:
            for _ in range(count):
                replies.append(await parser.read_response())
        except OSError as exc:
            await self.disconnect(nowait=True)
            raise RedisConnectionError(f"Error while reading from {self._host_error()} : {exc.args}") from exc
        except BaseException:
            await self.disconnect(nowait=True)  # as redis-py does: a reply left half read poisons the socket
            raise
        if self.health_check_interval:
            self.next_health_check = asyncio.get_running_loop().time() + self.health_check_interval
        return replies

    async def send_packed_command(self, command: str | bytes | Iterable[bytes], check_health: bool = True) -> None:
        if not self.is_connected:
            await self.connect_check_health(check_health=False)
        if check_health and self.health_check_interval and asyncio.get_running_loop().time() > self.next_health_check:
            await self.check_health()  # type: ignore[no-untyped-call]  # a PING when idle past the interval
        if isinstance(command, str):
            command = command.encode()
        if isinstance(command, bytes):
            command = [command]
        # what redis-py's own send does, its errors the same
        writer = self._writer
        if writer is None:  # connect_check_health left it closed: as redis-py says on a dead socket
            raise RedisConnectionError("Error while writing to socket: not connected.")
        try:
            writer.writelines(command)
            if writer.transport.get_write_buffer_size():
                async with asyncio.timeout(self.socket_timeout):
                    await writer.drain()  # the kernel did not take it all: this may wait
            else:
                await writer.drain()  # returns at once (it still raises for a lost connection)
        except TimeoutError:
            await self.disconnect(nowait=True)
            raise RedisTimeoutError("Timeout writing to socket") from None
        except OSError as exc:
            await self.disconnect(nowait=True)
            number, message = ("UNKNOWN", exc.args[0]) if len(exc.args) == 1 else exc.args[:2]
            raise RedisConnectionError(f"Error {number} while writing to socket. {message}.") from exc
        except BaseException:
            await self.disconnect(nowait=True)
            raise


class LeanPipeline(Pipeline):
    """redis-py's pipeline, its replies read under one deadline."""

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """A plain pipeline as redis-py runs it (one retry on a dropped
        connection, the connection disconnected first), without its timing
        and error recorders; a transaction, a WATCH or queued Script objects
        take redis-py's own path."""
        stack = self.command_stack
        if not stack or self.watching or self.scripts or self.is_transaction or self.explicit_transaction:
            return list(await super().execute(raise_on_error))
        if self.connection is None:
            self.connection = await self.connection_pool.get_connection()  # type: ignore[no-untyped-call]  # reset() gives it back
        conn = self.connection

        async def dropped(error: Exception, failures: int) -> None:
            await conn.disconnect(error=error, failure_count=failures)

        try:
            return await conn.retry.call_with_retry(
                lambda: self._execute_pipeline(conn, stack, raise_on_error), dropped, with_failure_count=True)
        finally:
            await self.reset()

    async def reset(self) -> None:  # type: ignore[override]  # redis-py types it as the RESET command
        """redis-py's reset, the connection given back at once: its own
        shields the release in `asyncio.shield`, a task for every pipeline."""
        connection, pool = self.connection, self.connection_pool
        if (connection is None or self.watching or not isinstance(pool, LeanPool)
                or not pool.needs_no_wait(connection)):
            await super().reset()  # type: ignore[no-untyped-call]
            return
        self.command_stack = []
        self.scripts = set()
        self.explicit_transaction = False
        self.connection = None
        pool.release_now(connection)

    async def _execute_pipeline(self, connection: Connection, commands: Any, raise_on_error: bool) -> list[Any]:
        if not isinstance(connection, DeadlineConnection):
            return list(await super()._execute_pipeline(connection, commands, raise_on_error))
        if any(NEVER_DECODE in options for _, options in commands):  # never sent by the site
            return list(await super()._execute_pipeline(connection, commands, raise_on_error))
        await connection.send_packed_command(connection.pack_commands([args for args, _ in commands]))
        try:
            async with asyncio.timeout(connection.socket_timeout):
                replies = await connection.read_replies(len(commands))
        except TimeoutError:
            # the read was cancelled mid-reply: the socket is already dropped
            raise RedisTimeoutError(f"Timeout reading from {connection.host}:{connection.port}") from None
        response = [self._shaped(args[0], options, reply) for (args, options), reply in zip(commands, replies)]
        for i, value in enumerate(response):
            if inspect.isawaitable(value):  # an async callback (none of the site's commands has one)
                response[i] = await value
        if raise_on_error:
            self.raise_first_error(commands, response)
        return response


    def _shaped(self, command_name: Any, options: dict[str, Any], reply: Any) -> Any:
        """What redis-py's `parse_response` makes of one reply already read:
        an error reply stays an error (or the command's EMPTY_RESPONSE), a
        reply goes through the command's response callback."""
        if isinstance(reply, ResponseError):
            return options.get(EMPTY_RESPONSE, reply)
        if command_name in self.UNWATCH_COMMANDS:
            self.watching = False
        callback = self.response_callbacks.get(command_name)
        if callback is None:
            return reply
        extra = {k: v for k, v in options.items() if k not in (EMPTY_RESPONSE, "keys")}
        return callback(reply, **extra)


class LeanRedis(aioredis.Redis):
    """`redis.asyncio.Redis` whose pipelines are `LeanPipeline`s."""

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        return LeanPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
