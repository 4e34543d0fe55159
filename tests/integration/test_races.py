"""Parallel clicks on one sandbox leave a state that one-at-a-time clicks reach.

Each widget's actions take the widget's lock (`queue_keys.lua`, mode `begin`), so N requests at
once queue behind each other, Reset included. After every round the keys are
read straight from Valkey and the flow's invariants checked.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.support import LiveSite, sandbox_of

ROUNDS = 20


def fanin_keys(r: Any, sandbox: str) -> dict[str, Any]:
    q = f"emq:{{{sandbox}.fanin}}:"
    return {
        "parent": r.hgetall(q + "job:JOBparent"),
        "deps": r.get(q + "job:JOBparent:dependencies"),
        "processed": r.hgetall(q + "job:JOBparent:processed"),
        "pending": r.zrange(q + "pending", 0, -1),
        "active": r.zrange(q + "active", 0, -1),
        "children": {c: r.hgetall(q + f"job:{c}") for c in ("JOBchild1", "JOBchild2", "JOBchild3")},
    }


def assert_reachable(keys: dict[str, Any]) -> None:
    """A state the fan-in reaches by clicking one at a time."""
    assert keys["parent"], "the parent row was consumed"
    deps = int(keys["deps"])
    done = set(keys["processed"])
    assert deps == 3 - len(done), keys
    for child, row in keys["children"].items():
        # a counted child is retired (no row), an uncounted one still waits
        assert (child in done) == (not row), keys
        assert (child in keys["pending"]) == bool(row), keys
    assert keys["active"] == [], keys
    if deps == 0:
        assert keys["parent"]["state"] == "pending" and keys["pending"] == ["JOBparent"], keys
    else:
        assert keys["parent"]["state"] == "awaiting_children" and "JOBparent" not in keys["pending"], keys


async def post(client: httpx.AsyncClient, action: str) -> int:
    answer = await client.post(f"/api/widgets/fanin/{action}", json={})
    return answer.status_code


@pytest.mark.parametrize("clicks", [5, 10])
async def test_parallel_completions_never_consume_the_released_parent(site: LiveSite, clicks: int) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    cookies = visitor.cookies
    r = site.redis()
    async with httpx.AsyncClient(base_url=site.url, cookies=cookies, timeout=30) as client:
        for _ in range(ROUNDS):
            assert await post(client, "reset") == 200
            for _ in range(2):
                assert await post(client, "complete-child") == 200
            statuses = await asyncio.gather(*(post(client, "complete-child") for _ in range(clicks)))
            assert set(statuses) == {200}, statuses
            keys = fanin_keys(r, sandbox)
            assert_reachable(keys)
            assert keys["deps"] == "0"


async def test_a_reset_racing_completions_leaves_a_fresh_or_a_stepped_flow(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    cookies = visitor.cookies
    r = site.redis()
    async with httpx.AsyncClient(base_url=site.url, cookies=cookies, timeout=30) as client:
        for _ in range(ROUNDS):
            actions = ["reset", *["complete-child"] * 4]
            statuses = await asyncio.gather(*(post(client, a) for a in actions))
            assert set(statuses) == {200}, statuses
            assert_reachable(fanin_keys(r, sandbox))


async def test_parallel_clicks_on_the_results_reader_keep_its_parent(site: LiveSite) -> None:
    visitor = site.visitor("/flows/reading-the-results")
    sandbox = sandbox_of(visitor)
    r = site.redis()
    q = f"emq:{{{sandbox}.results}}:"
    async with httpx.AsyncClient(base_url=site.url, cookies=visitor.cookies, timeout=30) as client:
        async def act(action: str) -> int:
            return (await client.post(f"/api/widgets/results/{action}", json={})).status_code

        for _ in range(ROUNDS // 2):
            assert await act("reset") == 200
            statuses = await asyncio.gather(*(act(a) for a in ["complete-child", "fail-child"] * 5))
            assert set(statuses) == {200}, statuses
            parent = r.hgetall(q + "job:JOBquote")
            counted = r.hlen(q + "job:JOBquote:processed") + r.hlen(q + "job:JOBquote:ignored")
            assert parent.get("state") == "pending", parent
            assert counted == 3 and r.get(q + "job:JOBquote:dependencies") == "0"
            assert r.zrange(q + "pending", 0, -1) == ["JOBquote"]


def test_a_landing_cut_short_by_a_killed_site_is_landed_afresh_when_the_widget_next_shows(site: LiveSite) -> None:
    """A site killed mid-land leaves keys but no `landed` flag (it is written
    last): the next show clears what is there and lands the whole flow."""
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    r = site.redis()
    q = f"emq:{{{sandbox}.fanin}}:"
    # what a kill between the parent's hold and the children would leave
    r.delete(f"lab:{{{sandbox}.fanin}}:state", q + "job:JOBchild2", q + "job:JOBchild3")
    r.zrem(q + "pending", "JOBchild2", "JOBchild3")
    r.hset(q + "job:JOBorphan", mapping={"state": "pending", "parent": "JOBparent"})
    r.zadd(q + "pending", {"JOBorphan": 0})
    assert visitor.get("/api/widgets/fanin/state").status_code == 200
    keys = fanin_keys(r, sandbox)
    assert_reachable(keys)
    assert keys["deps"] == "3" and keys["pending"] == ["JOBchild1", "JOBchild2", "JOBchild3"]
    assert not r.exists(q + "job:JOBorphan")
