"""The site's client on one server (server/valkey/pool.py), on a real Valkey:
redis-py's pool and pipeline with their per-round-trip bookkeeping cut, and
nothing else changed — the same replies, a wait for a busy pool, a deadline
that drops the socket, one retry after a dropped connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.asyncio import connection as redis_connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.valkey import connect
from server.valkey.pool import LeanPipeline, LeanPool, LeanRedis
from server.valkey.process import ValkeyProcess


def lean(url: str, *, max_connections: int = 8, timeout: float = 5.0, socket_timeout: float = 5.0) -> LeanRedis:
    """A client built as `connect.open_client` builds the site's, with small limits."""
    return LeanRedis.from_pool(LeanPool.from_url(
        url, decode_responses=True, socket_connect_timeout=1, socket_timeout=socket_timeout,
        max_connections=max_connections, timeout=timeout, **connect.packed_on_tcp(url),
        retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
    ))


@pytest.fixture
async def clients(valkey: ValkeyProcess) -> AsyncIterator[tuple[LeanRedis, aioredis.Redis]]:
    site, plain = lean(valkey.url), aioredis.Redis.from_url(valkey.url, decode_responses=True)
    await plain.flushdb()
    try:
        yield site, plain
    finally:
        await site.aclose()
        await plain.aclose()


def queue_everything(pipe: Any, sha: str) -> None:
    pipe.set("s", "1")
    pipe.hset("h", mapping={"a": "1", "b": "2"})
    pipe.hgetall("h")
    pipe.zadd("z", {"m1": 1, "m2": 2.5})
    pipe.zrange("z", 0, -1, withscores=True)
    pipe.expire("s", 100)
    pipe.exists("s", "nope")
    pipe.execute_command("NOSUCHCOMMAND")
    pipe.execute_command("EVALSHA", sha, 1, "s")
    pipe.hget("h", "missing")


def shown(replies: list[Any]) -> list[Any]:
    return [("error", type(r).__name__, str(r).split(",")[0]) if isinstance(r, Exception) else r for r in replies]


async def test_the_site_client_is_the_lean_one_on_a_tcp_url(valkey: ValkeyProcess) -> None:
    client = connect.open_client(valkey.url, cluster=False)
    try:
        assert isinstance(client, LeanRedis) and isinstance(client.connection_pool, LeanPool)
        assert isinstance(client.pipeline(transaction=False), LeanPipeline)
        assert await client.ping() is True
    finally:
        await client.aclose()


async def test_a_lean_pipeline_answers_exactly_what_redis_pys_own_answers(
        clients: tuple[LeanRedis, aioredis.Redis]) -> None:
    site, plain = clients
    sha = await plain.script_load("return redis.call('INCR', KEYS[1])")
    answers = []
    for client in (site, plain):
        await plain.flushdb()
        async with client.pipeline(transaction=False) as pipe:
            queue_everything(pipe, sha)
            answers.append(shown(await pipe.execute(raise_on_error=False)))
    assert answers[0] == answers[1]
    assert answers[0][2] == {"a": "1", "b": "2"} and answers[0][4] == [("m1", 1.0), ("m2", 2.5)]
    assert answers[0][7][0] == "error" and answers[0][8] == 2
    # raise_on_error=True raises the first error, as redis-py does, after reading every reply
    async with site.pipeline(transaction=False) as pipe:
        pipe.set("t", "1")
        pipe.execute_command("NOSUCHCOMMAND")
        pipe.set("u", "2")
        with pytest.raises(ResponseError):
            await pipe.execute()
    assert await plain.mget("t", "u") == ["1", "2"]
    assert await site.get("u") == "2"  # the connection is still in step


async def test_a_pipelines_replies_are_read_under_one_deadline_not_one_each(
        clients: tuple[LeanRedis, aioredis.Redis], monkeypatch: pytest.MonkeyPatch) -> None:
    site, plain = clients
    made: list[float | None] = []
    real = redis_connection.async_timeout

    def counted(delay: float | None) -> Any:
        made.append(delay)
        return real(delay)

    await site.ping()
    await plain.ping()  # connected: the handshake's own reads are not counted
    monkeypatch.setattr(redis_connection, "async_timeout", counted)
    for client, expected in ((site, 0), (plain, 20)):
        made.clear()
        async with client.pipeline(transaction=False) as pipe:
            for i in range(20):
                pipe.incr(f"n{i}")
            assert await pipe.execute() == [1 if client is site else 2] * 20
        assert len(made) == expected, (client, made)  # redis-py alone: one timeout per reply


async def test_a_stalled_valkey_times_the_pipeline_out_and_the_next_one_reads_its_own_replies(
        valkey: ValkeyProcess) -> None:
    site = lean(valkey.url, socket_timeout=0.3)
    blocker = aioredis.Redis.from_url(valkey.url, decode_responses=True, socket_timeout=10)
    try:
        await site.set("k", "before")
        await blocker.execute_command("CLIENT", "PAUSE", 800, "ALL")  # Valkey answers nobody for 0.8 s
        started = asyncio.get_running_loop().time()
        async with site.pipeline(transaction=False) as pipe:
            pipe.set("k", "during")
            pipe.get("k")
            with pytest.raises(RedisTimeoutError):
                await pipe.execute()
        assert asyncio.get_running_loop().time() - started < 0.7  # the deadline, not the stall
        await asyncio.sleep(0.6)
        # the timed-out socket was dropped: its late replies cannot answer this pipeline
        async with site.pipeline(transaction=False) as pipe:
            pipe.set("k", "after")
            pipe.get("k")
            pipe.echo("mine")
            assert await pipe.execute() == [True, "after", "mine"]
    finally:
        await site.aclose()
        await blocker.aclose()


async def test_a_connection_killed_behind_the_pools_back_is_retried_once_on_a_fresh_one(
        clients: tuple[LeanRedis, aioredis.Redis]) -> None:
    site, plain = clients
    await site.set("k", "1")
    killed = await plain.client_kill_filter(_type="normal", skipme=True)
    assert killed >= 1
    async with site.pipeline(transaction=False) as pipe:
        pipe.incr("k")
        pipe.get("k")
        assert await pipe.execute() == [2, "2"]
    assert await site.incr("k") == 3  # a single command too
    assert await plain.get("k") == "3"  # each ran once


async def test_a_busy_pool_makes_a_checkout_wait_for_a_release_then_gives_up(valkey: ValkeyProcess) -> None:
    site = lean(valkey.url, max_connections=2, timeout=0.3)
    pool = site.connection_pool
    try:
        held = [await pool.get_connection(), await pool.get_connection()]
        waiting = asyncio.create_task(pool.get_connection())
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await pool.release(held.pop())
        third = await asyncio.wait_for(waiting, 1)
        started = asyncio.get_running_loop().time()
        with pytest.raises(RedisConnectionError, match="No connection available"):
            await pool.get_connection()
        assert 0.25 < asyncio.get_running_loop().time() - started < 1.0
        for connection in (*held, third):
            await pool.release(connection)
        assert len(pool._in_use_connections) == 0 and len(pool._available_connections) == 2
    finally:
        await site.aclose()


async def test_many_tasks_share_a_small_pool_and_every_connection_comes_back(valkey: ValkeyProcess) -> None:
    site = lean(valkey.url, max_connections=3)
    try:
        async def one(i: int) -> list[Any]:
            async with site.pipeline(transaction=False) as pipe:
                pipe.set(f"k{i}", i)
                pipe.get(f"k{i}")
                return list(await pipe.execute())

        async def cancelled() -> None:
            task = asyncio.create_task(site.blpop(["nothing"], timeout=0.5))  # waits on the server
            await asyncio.sleep(0.01)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        results = await asyncio.gather(*(one(i) for i in range(60)), cancelled())
        assert results[:60] == [[True, str(i)] for i in range(60)]
        pool = site.connection_pool
        assert not pool._in_use_connections and len(pool._available_connections) <= 3
        assert not pool._waiters
        assert await site.get("k59") == "59"
    finally:
        await site.aclose()


async def test_a_waiter_woken_then_cancelled_passes_its_turn_to_the_next(valkey: ValkeyProcess) -> None:
    site = lean(valkey.url, max_connections=1, timeout=3)
    pool = site.connection_pool
    try:
        held = await pool.get_connection()
        first = asyncio.create_task(pool.get_connection())
        second = asyncio.create_task(pool.get_connection())
        await asyncio.sleep(0.05)
        await pool.release(held)  # wakes `first`...
        first.cancel()  # ...which goes away before it runs
        started = asyncio.get_running_loop().time()
        connection = await asyncio.wait_for(second, 1)
        assert asyncio.get_running_loop().time() - started < 0.5  # not after the 3 s timeout
        assert first.cancelled()
        await pool.release(connection)
        assert not pool._in_use_connections and not pool._waiters
    finally:
        await site.aclose()


async def test_sending_a_command_or_a_pipeline_makes_no_task_of_its_own(
    clients: tuple[LeanRedis, aioredis.Redis],
) -> None:
    # redis-py's own send waits under asyncio.wait_for, a task per command
    # sent, and its pipeline gives its connection back in asyncio.shield, a
    # task per pipeline
    site, plain = clients
    await site.ping()
    await plain.ping()
    loop = asyncio.get_running_loop()
    made: list[Any] = []

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    counts = {}
    loop.set_task_factory(factory)  # type: ignore[arg-type]
    try:
        for name, client in (("site", site), ("plain", plain)):
            made.clear()
            for _ in range(10):
                async with client.pipeline(transaction=False) as pipe:
                    pipe.incr("n")
                    pipe.get("n")
                    await pipe.execute()
                await client.incr("m")
            counts[name] = len(made)
    finally:
        loop.set_task_factory(None)
    assert counts == {"site": 0, "plain": 30}
    assert await plain.mget("n", "m") == ["20", "20"]


async def test_a_connection_given_back_with_a_reply_unread_is_not_handed_out_as_it_is(
        clients: tuple[LeanRedis, aioredis.Redis]) -> None:
    site, _ = clients
    pool = site.connection_pool
    await site.set("k", "mine")
    connection = await pool.get_connection()
    await connection.send_command("ECHO", "left over")  # its reply is never read
    await asyncio.sleep(0.05)
    await pool.release(connection)
    assert await site.get("k") == "mine"  # not "left over"
    assert await site.echo("next") == "next"
