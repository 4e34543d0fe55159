"""The site's own scripts are .lua files, registered once per client and run by SHA."""

from __future__ import annotations

import hashlib
import time

import redis.asyncio as aioredis

from server.sandboxes import lifecycle, site_scripts
from server.sandboxes.sandbox import REGISTRY_KEY
from server.web import guard


async def test_a_site_script_is_registered_once_per_client_by_the_sha_of_its_file(conn: aioredis.Redis) -> None:
    await conn.script_flush()
    first = site_scripts.script(conn, "admit")
    assert site_scripts.script(conn, "admit") is first
    assert first.sha == hashlib.sha1(site_scripts.source("admit").encode("utf-8")).hexdigest()
    await guard.admit(conn, "s000000000a", cap=5)
    assert await conn.script_exists(first.sha) == [True]
    assert await conn.zscore(REGISTRY_KEY, "s000000000a") is not None


async def test_the_reaper_forgets_only_a_sandbox_still_idle_through_its_file_script(conn: aioredis.Redis) -> None:
    now = int(time.time() * 1000)
    await conn.zadd(REGISTRY_KEY, {"s0000000old": now - 3_600_000, "s0000000new": now})
    assert await lifecycle.expire_idle(conn, ttl_seconds=60) == ["s0000000old"]
    assert await conn.zrange(REGISTRY_KEY, 0, -1) == ["s0000000new"]
    unregister = site_scripts.script(conn, "unregister_if_idle")
    assert await conn.script_exists(unregister.sha) == [True]
