"""What a change costs with many pages open on one sandbox (a class on the
instructor's sandbox), on the real site under uvicorn: every page gets the
change once, and Valkey does the same work for forty pages as for one (one
shared snapshot read per change; the pages' heartbeats are the worker's,
per visitor, not per page)."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlsplit

import redis

from bench.rawhttp import HttpConn, dependencies_of, sse_stream
from bench.servers import new_cookie
from tests.support import LiveSite

STREAM = "/api/stream?widgets=fanin"


class Page:
    def __init__(self) -> None:
        self.deps: list[int] = []  # :dependencies of every fan-in snapshot received, in order

    def on_event(self, event: str, data: str, at: float) -> None:
        if event == "snapshot" and (deps := dependencies_of(data)) is not None:
            self.deps.append(deps)


def evalsha_calls(r: redis.Redis) -> int:
    stats: Any = r.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def until(pages: list[Page], deps: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while any(not p.deps or p.deps[-1] != deps for p in pages):
        assert time.monotonic() < deadline, [p.deps[-3:] for p in pages if not p.deps or p.deps[-1] != deps][:3]
        await asyncio.sleep(0.01)


async def one_completion(site: LiveSite, count: int) -> tuple[int, list[Page]]:
    """`count` pages on one sandbox, then one "Complete child": the EVALSHAs it
    cost Valkey, and the pages (each one's snapshots since they opened)."""
    where = urlsplit(site.url)
    host, port = where.hostname or "127.0.0.1", where.port or 80
    cookie = new_cookie(site.url)
    actor = HttpConn(host, port, cookie)
    assert (await actor.post("/api/widgets/fanin/reset"))[0] == 200
    pages = [Page() for _ in range(count)]
    tasks = [asyncio.create_task(sse_stream(host, port, STREAM, cookie, p.on_event)) for p in pages]
    try:
        await until(pages, 3)
        await asyncio.sleep(0.3)  # the streams' own first reads are over
        for page in pages:
            page.deps.clear()
        r = site.redis()
        before = evalsha_calls(r)
        assert (await actor.post("/api/widgets/fanin/complete-child"))[0] == 200
        await until(pages, 2)
        await asyncio.sleep(0.3)  # a second snapshot of the same change would be here by now
        return evalsha_calls(r) - before, pages
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await actor.close()


def test_one_change_costs_valkey_the_same_with_forty_pages_open_as_with_one(clean: LiveSite) -> None:
    alone, _ = asyncio.run(one_completion(clean, 1))
    crowd, pages = asyncio.run(one_completion(clean, 40))
    # the action's own scripts and ONE snapshot read, whatever the number of pages
    assert crowd == alone, (alone, crowd)
    # and every page got the change exactly once
    assert [p.deps for p in pages] == [[2]] * 40
