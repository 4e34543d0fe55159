"""Footprint: Valkey memory per sandbox after each widget's scenario, and
what remains after expiry. For each widget, a fresh sandbox's state read
lands the scenario; every key of the sandbox (found by pattern, so a key the
site's removal would miss still counts) is priced with MEMORY USAGE, again
after each action ran once; baseline: the same keys' DUMP size. Then
`reaper.expire_idle(conn, catalog, 0)`, and what is left (target: 0).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import redis
import redis.asyncio as aioredis

from bench import servers
from server.sandboxes.keys import REGISTRY_KEY
from server.widgets import WIDGETS
from server.widgets.snapshot import Catalog


def sandbox_keys(client: redis.Redis, sandbox: str) -> list[bytes]:
    """Every key a sandbox holds: its queues' learner keys and every lab key under its id (a scan: bench only)."""
    return [n for p in (f"emq:{{{sandbox}.*", f"lab:{{{sandbox}*") for n in client.scan_iter(match=p, count=1000)]


def price(client: redis.Redis, sandbox: str) -> dict[str, int]:
    names = sandbox_keys(client, sandbox)
    memory = sum(int(client.memory_usage(n, samples=0) or 0) for n in names)
    dumped = sum(len(client.dump(n) or b"") for n in names)
    return {"keys": len(names), "bytes": memory, "dump_bytes": dumped}


def run(site_url: str, valkey_url: str) -> dict[str, Any]:
    client = redis.Redis.from_url(valkey_url)
    widgets: dict[str, Any] = {}
    sandboxes: dict[str, str] = {}
    try:
        for name, widget in WIDGETS.items():
            cookie = servers.new_cookie(site_url)
            sandbox = servers.sandbox_of(cookie)
            sandboxes[name] = sandbox
            servers.land(site_url, cookie, [name])
            landed = price(client, sandbox)
            # goto replays the tour: its actions are counted here already
            answers = {slug: servers.post(site_url, f"/api/widgets/{name}/{slug}", cookie)[0]
                       for slug in widget.actions if slug not in ("reset", "goto")}
            acted = price(client, sandbox)
            widgets[name] = {"sandbox": sandbox, "landed": landed, "after_actions": acted, "action_status": answers}
        time.sleep(0.01)
        expired = asyncio.run(_expire(valkey_url))
        left = {name: price(client, sb) for name, sb in sandboxes.items()}
        still_registered = sum(client.zscore(REGISTRY_KEY, sb) is not None for sb in sandboxes.values())
    finally:
        client.close()
    worst = max(w["landed"]["bytes"] for w in widgets.values())
    return {
        "widgets": widgets,
        "max_landed_bytes": worst,
        "max_after_actions_bytes": max(w["after_actions"]["bytes"] for w in widgets.values()),
        "expired_sandboxes": len(set(expired) & set(sandboxes.values())),
        "after_expiry": {
            "keys": sum(v["keys"] for v in left.values()),
            "bytes": sum(v["bytes"] for v in left.values()),
            "still_registered": still_registered,
        },
    }


async def _expire(valkey_url: str) -> list[str]:
    from server.lifecycle import reaper

    conn = aioredis.Redis.from_url(valkey_url, decode_responses=True)
    try:
        return list(await reaper.expire_idle(conn, Catalog(dict(WIDGETS)), 0))
    finally:
        await conn.aclose()
