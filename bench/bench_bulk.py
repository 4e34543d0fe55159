"""Bulk flows: flows/second for add_bulk vs one flows.add per flow, same
run, same server; and, for reference, the same flows landed in one pipeline
built here from the host library's public pieces (the host library's own
pipelined bulk add is gone from the new core: `add_bulk` adds one flow at a
time, two round trips each, so the reference row says what that costs).

    python -m bench.bench_bulk [--flows 1000] [--seconds N]

Each flow is a parent with three same-queue children. Every variant lands
``flows`` flows into a queue of its own (a fresh queue per round, deleted
after), repeated until ``--seconds`` have passed (at least once); the best
round counts. ``run(url, flows)`` returns the numbers as a dict so a report
can embed them; the command line starts its own valkey-server.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis

from server.emq import flows as emq_flows
from server.emq import keyspace, registry
from server.emq.shape import parse_flow

Variant = Callable[[Any, str, list[dict[str, Any]]], Awaitable[int]]


def make_flows(count: int) -> list[dict[str, Any]]:
    return [
        {
            "parent": {"id": f"JOBp{i}", "payload": "{}"},
            "children": [{"id": f"JOBp{i}c{c}", "payload": "{}"} for c in range(3)],
        }
        for i in range(count)
    ]


async def _bulk(conn: Any, queue: str, batch: list[dict[str, Any]]) -> int:
    return len(await emq_flows.add_bulk(conn, queue, batch))


async def _singles(conn: Any, queue: str, batch: list[dict[str, Any]]) -> int:
    for flow in batch:
        await emq_flows.add(conn, queue, flow)
    return len(batch)


async def _pipelined(conn: Any, queue: str, batch: list[dict[str, Any]]) -> int:
    """Every flow's `enqueue_flow` and its children's policies, in one pipeline
    (what `flows.add` sends for a same-queue flow, two round trips each, sent
    together); a reference, not a path of the site."""
    enqueue = registry.script("enqueue_flow")
    async with conn.pipeline(transaction=False) as pipe:
        for flow in batch:
            keys, args = emq_flows.enqueue_flow_call(queue, flow)
            enqueue.queue(pipe, keys, args)
            for child in parse_flow(queue, flow).children:
                pipe.hset(keyspace.job_key(child.queue, child.id), "parent_policy", child.policy)
        await pipe.execute()  # the warm-up loaded the script: an error here is a real one
    return len(batch)


VARIANTS: dict[str, Variant] = {
    "add_bulk": _bulk,
    "flows.add x N": _singles,
    "one pipeline (reference)": _pipelined,
}


async def _drop_queue(conn: Any, queue: str) -> None:
    pattern = keyspace.base(queue).replace("{", "\\{").replace("}", "\\}") + "*"
    async for key in conn.scan_iter(match=pattern, count=1000):
        await conn.unlink(key)


async def _measure(url: str, flows: int, seconds: float) -> dict[str, Any]:
    conn = aioredis.Redis.from_url(url, decode_responses=True)
    batch = make_flows(flows)
    out: dict[str, Any] = {"flows": flows, "children_per_flow": 3, "variants": {}}
    try:
        # warm-up: loads every script once, so no variant pays SCRIPT LOAD
        await registry.script("enqueue_flow").load(conn)
        warm = f"bench-warm-{uuid.uuid4().hex[:8]}"
        await _pipelined(conn, warm, make_flows(2))
        await _singles(conn, warm + "x", make_flows(2))
        await _drop_queue(conn, warm)
        await _drop_queue(conn, warm + "x")
        for name, variant in VARIANTS.items():
            best = float("inf")
            rounds = 0
            started = time.perf_counter()
            while rounds == 0 or time.perf_counter() - started < seconds:
                queue = f"bench-{uuid.uuid4().hex[:10]}"
                t0 = time.perf_counter()
                landed = await variant(conn, queue, batch)
                elapsed = time.perf_counter() - t0
                assert landed == flows, f"{name} landed {landed} of {flows}"
                await _drop_queue(conn, queue)
                best = min(best, elapsed)
                rounds += 1
            out["variants"][name] = {
                "seconds": round(best, 4),
                "flows_per_second": round(flows / best, 1),
                "rounds": rounds,
            }
    finally:
        await conn.aclose()
    return out


def run(url: str, flows: int = 1000, seconds: float = 0.0) -> dict[str, Any]:
    """Measure every variant against the Valkey at ``url``; returns a dict."""
    return asyncio.run(_measure(url, flows, seconds))


def print_table(result: dict[str, Any]) -> None:
    print(f"{result['flows']} flows x {result['children_per_flow']} same-queue children")
    print(f"{'variant':<22}{'flows/s':>12}{'best s':>10}{'rounds':>8}")
    for name, row in result["variants"].items():
        print(f"{name:<22}{row['flows_per_second']:>12,.1f}{row['seconds']:>10.3f}{row['rounds']:>8}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--flows", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=0.0, help="repeat each variant this long")
    args = parser.parse_args(argv)
    from server.valkey.process import ValkeyProcess

    with ValkeyProcess() as server:
        result = run(server.url, args.flows, args.seconds)
    print_table(result)
    return result


if __name__ == "__main__":
    main()
