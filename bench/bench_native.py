"""The two executors of one flat completion: EMQ.COMPLETE against complete.lua.

    python -m bench.bench_native            # 20,000 completions per executor
    python -m bench.bench_native --jobs 2000

A managed valkey-server (the EMQ module loaded) holds N claimed flat jobs in
each of two queues; one queue is completed with `EMQ.COMPLETE 2 …`, the other
with the EVALSHA line `jobs.complete` sends, both pipelined 100 to a round
trip, then 1,000 of each one round trip at a time. The figures are printed,
never asserted: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

import redis.asyncio as aioredis

from server.emq import jobs, keyspace, registry
from server.valkey import native
from server.valkey.process import ValkeyProcess

BATCH = 100


async def land(conn: Any, queue: str, count: int) -> None:
    """`count` flat jobs, each already claimed (attempts 1, in active)."""
    active = keyspace.queue_key(queue, "active")
    for start in range(0, count, 1000):
        async with conn.pipeline(transaction=False) as pipe:
            for i in range(start, min(start + 1000, count)):
                job = f"JOB{i}"
                pipe.hset(keyspace.job_key(queue, job), mapping={"state": "active", "attempts": "1", "payload": "x"})
                pipe.zadd(active, {job: 1})
            await pipe.execute()


def line(queue: str, job: str) -> tuple[list[str], list[str]]:
    return jobs.complete_call(queue, job, 1, jobs.Lineage(mode=""))


async def by_native(conn: Any, queue: str, ids: list[str]) -> None:
    for start in range(0, len(ids), BATCH):
        async with conn.pipeline(transaction=False) as pipe:
            for job in ids[start:start + BATCH]:
                keys, args = line(queue, job)
                pipe.execute_command("EMQ.COMPLETE", 2, *keys[:2], *args[:3])
            assert all(r == 1 for r in await pipe.execute())


async def by_script(conn: Any, queue: str, ids: list[str]) -> None:
    script = registry.script("complete")
    for start in range(0, len(ids), BATCH):
        async with conn.pipeline(transaction=False) as pipe:
            for job in ids[start:start + BATCH]:
                keys, args = line(queue, job)
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            assert all(r == 1 for r in await pipe.execute())


async def one_at_a_time(conn: Any, queue: str, ids: list[str], native_call: bool) -> float:
    """Median microseconds of one completion, one round trip each."""
    script = registry.script("complete")
    spent = []
    for job in ids:
        keys, args = line(queue, job)
        began = time.perf_counter()
        if native_call:
            await conn.execute_command("EMQ.COMPLETE", 2, *keys[:2], *args[:3])
        else:
            await conn.evalsha(script.sha, len(keys), *keys, *args)
        spent.append(time.perf_counter() - began)
    spent.sort()
    return spent[len(spent) // 2] * 1e6


async def timed(fn: Any, *args: Any) -> float:
    began = time.perf_counter()
    await fn(*args)
    return time.perf_counter() - began


async def run(url: str, count: int) -> dict[str, Any]:
    """Both executors over `count` jobs each (at least 1,001: the first 1,000
    are completed one round trip at a time)."""
    conn = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        if not await native.loaded(conn):
            raise SystemExit("the EMQ module is not loaded: run `make module` first")
        await conn.script_load(registry.script_source("complete"))
        await land(conn, "native", count)
        await land(conn, "script", count)
        ids = [f"JOB{i}" for i in range(count)]
        native_s = await timed(by_native, conn, "native", ids[1000:])
        script_s = await timed(by_script, conn, "script", ids[1000:])
        native_us = await one_at_a_time(conn, "native", ids[:1000], True)
        script_us = await one_at_a_time(conn, "script", ids[:1000], False)
        stats = await conn.info("commandstats")
        same = await conn.hgetall(keyspace.metrics_key("native")) == await conn.hgetall(keyspace.metrics_key("script"))
        return {
            "completions": count,
            "native_per_s": round((count - 1000) / native_s),
            "script_per_s": round((count - 1000) / script_s),
            "native_p50_us": round(native_us, 1),
            "script_p50_us": round(script_us, 1),
            "same_metrics": same,
            # the server's own time per call, from INFO commandstats
            "native_server_us": stats.get("cmdstat_emq.complete", {}).get("usec_per_call"),
            "script_server_us": stats.get("cmdstat_evalsha", {}).get("usec_per_call"),
        }
    finally:
        # Every row was completed: the two metrics hashes are all that is left.
        await conn.delete(keyspace.metrics_key("native"), keyspace.metrics_key("script"))
        await conn.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    count = max(2000, parser.parse_args().jobs)
    with ValkeyProcess() as valkey:
        print(json.dumps(asyncio.run(run(valkey.url, count)), indent=2))


if __name__ == "__main__":
    main()
