"""Clicks at once, from many tabs of one sandbox, leave a state that clicking
one at a time reaches.

Every action of a widget takes the widget's lock (server/widgets/turn.py), so
N requests at once run one after another, Reset included. Each round here
lands the widget afresh, sends a handful of actions in parallel over HTTP
(each from its own tab), then reads the widget's keys and lab state straight
from Valkey and checks them against every order the same actions could have
run in one at a time: each order replayed through the executor in a sandbox
of the test's own (tests/widgets.py), on the same Valkey.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio as aioredis

from server.widgets import WIDGETS
from server.widgets.base import Widget
from tests.support import DIVE, LiveSite, sandbox_of
from tests.widgets import act

CLOCK = re.compile(r"\b1\d{12}\b")  # a lease deadline (ms) kept in a widget's picture of its keys
REPLAY = "sreplay0000"  # the sandbox the one-at-a-time orders run in
Click = tuple[str, dict[str, Any]]


START: Click = ("goto", {"step": 0})  # the scenario as it lands, whatever the learner chose before


def rounds() -> list[tuple[str, list[Click]]]:
    """For each widget (as the code finds them), two rounds of clicks sent at once:
    Reset racing the first three different clicks of its tour, and its tour's
    first click five times."""
    found = []
    for name, widget in WIDGETS.items():
        if widget.runs_unlocked:  # a second action meanwhile is a 409, not queued: its own test_widget_*.py
            continue
        tour = [(slug, dict(body)) for step in widget.tour for slug, body in step.replay]
        different: list[Click] = []
        for click in tour:
            if click not in different:
                different.append(click)
        found.append((name, [("reset", {}), *different[:3]]))
        found.append((name, [tour[0]] * 5))
    return found


def state_of(r: redis.Redis, widget: str, sandbox: str) -> tuple[Any, ...]:
    """A widget's keys (type and value, names without the sandbox) and its lab
    state (without `ver` and the last outcome's record), comparable across sandboxes."""
    found: list[Any] = []
    for part in WIDGETS[widget].queue_parts:
        prefix = f"emq:{{{sandbox}.{part}}}"
        for key in sorted(r.scan_iter(match=prefix.replace("{", "[{]").replace("}", "[}]") + "*", count=1000)):
            kind = r.type(key)
            if kind == "hash":
                value: Any = sorted(r.hgetall(key).items())
            elif kind == "zset":  # members in score order; a score may be the clock's (a lease, a death)
                value = r.zrange(key, 0, -1)
            elif kind == "list":
                value = r.lrange(key, 0, -1)
            else:
                value = r.get(key)
            found.append((key.removeprefix(prefix), kind, frozen(json.loads(json.dumps(value).replace(sandbox, "S")))))
        state = r.hgetall(f"lab:{{{sandbox}.{part}}}:state")
        found.append((f"{part} lab state", tuple(sorted((k, CLOCK.sub("<ms>", str(v)).replace(sandbox, "S"))
                                                        for k, v in state.items() if k not in ("ver", "outcome")))))
    return tuple(found)


def frozen(value: Any) -> Any:
    return tuple(frozen(v) for v in value) if isinstance(value, list | tuple) else value


def reachable(site: LiveSite, widget: str, clicks: list[Click]) -> set[tuple[Any, ...]]:
    """The states every one-at-a-time order of `clicks` leaves, from the scenario as it lands."""

    async def replay() -> set[tuple[Any, ...]]:
        conn = aioredis.Redis.from_url(site.valkey_url, decode_responses=True)
        reader = site.redis()
        try:
            found = set()
            orders = {tuple((slug, tuple(sorted(body.items()))) for slug, body in order)
                      for order in itertools.permutations(clicks)}
            for order in sorted(orders):
                await act(conn, widget, START[0], REPLAY, **START[1])
                for slug, items in order:
                    await act(conn, widget, slug, REPLAY, **dict(items))
                found.add(state_of(reader, widget, REPLAY))
            return found
        finally:
            await conn.aclose()

    return asyncio.run(replay())


def at_once(site: LiveSite, visitor: httpx.Client, widget: str, clicks: list[Click]) -> list[int]:
    """`clicks` sent together, each from a tab of its own of the visitor's sandbox."""

    async def send() -> list[int]:
        tabs = [httpx.AsyncClient(base_url=site.url, cookies=visitor.cookies, timeout=30,
                                  headers={"X-Emqlab-Tab": f"tab{n}"}) for n in range(len(clicks))]
        try:
            answers = await asyncio.gather(*(tab.post(f"/api/widgets/{widget}/{slug}", json=body)
                                             for tab, (slug, body) in zip(tabs, clicks, strict=True)))
            return [a.status_code for a in answers]
        finally:
            for tab in tabs:
                await tab.aclose()

    return asyncio.run(send())


ROUNDS = rounds()


@pytest.mark.parametrize(("widget", "clicks"), ROUNDS, ids=[f"{w}:{'+'.join(s for s, _ in c)}" for w, c in ROUNDS])
def test_clicks_at_once_from_many_tabs_leave_a_state_that_one_at_a_time_clicks_reach(
    site: LiveSite, widget: str, clicks: list[Click]
) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    assert visitor.post(f"/api/widgets/{widget}/{START[0]}", json=START[1]).status_code == 200
    codes = at_once(site, visitor, widget, clicks)
    assert set(codes) == {200}, codes
    got = state_of(site.redis(), widget, sandbox)
    assert got in reachable(site, widget, clicks), \
        f"{widget}: a state no order of {[slug for slug, _ in clicks]} reaches one at a time"


def test_parallel_completions_never_count_a_child_twice_nor_consume_the_released_parent(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    r = site.redis()
    q = f"emq:{{{sandbox}.fanin}}:"
    for _ in range(4):
        assert visitor.post("/api/widgets/fanin/reset", json={}).status_code == 200
        assert set(at_once(site, visitor, "fanin", [("complete-child", {})] * 8)) == {200}
        assert r.get(q + "job:JOBparent:dependencies") == "0"
        assert sorted(r.hkeys(q + "job:JOBparent:processed")) == ["JOBchild1", "JOBchild2", "JOBchild3"]
        assert r.hget(q + "job:JOBparent", "state") == "pending"
        assert r.zrange(q + "pending", 0, -1) == ["JOBparent"] and r.zrange(q + "active", 0, -1) == []


def test_tabs_opening_a_widget_at_once_land_its_scenario_once(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)

    async def open_tabs() -> list[int]:
        async with httpx.AsyncClient(base_url=site.url, cookies=visitor.cookies, timeout=30) as tab:
            answers = await asyncio.gather(*(tab.get(f"/api/widgets/{name}/state")
                                             for name in WIDGETS for _ in range(6)))
            return [a.status_code for a in answers]

    assert set(asyncio.run(open_tabs())) == {200}
    r = site.redis()
    for name, widget in WIDGETS.items():
        if type(widget).first_shown is not Widget.first_shown:
            # it plays a recorded run on its first showing, which a Reset does not: a landing
            # twice would show as two runs' keys, which test_widget_race's own checks refuse
            continue
        landed = state_of(r, name, sandbox)
        assert visitor.post(f"/api/widgets/{name}/reset", json={}).status_code == 200
        assert state_of(r, name, sandbox) == landed, f"{name} was landed more than once, or over itself"


def test_a_landing_cut_short_by_a_killed_site_is_landed_afresh_when_the_widget_next_shows(site: LiveSite) -> None:
    """A site killed mid-landing leaves keys but no `landed` mark (written with
    the landing's last step): the next showing clears them and lands the whole flow."""
    visitor = site.visitor(DIVE)
    sandbox = sandbox_of(visitor)
    r = site.redis()
    assert visitor.get("/api/widgets/fanin/state").status_code == 200
    landed = state_of(r, "fanin", sandbox)
    q = f"emq:{{{sandbox}.fanin}}:"
    # what a kill between the parent's hold and the last children would leave
    r.hdel(f"lab:{{{sandbox}.fanin}}:state", "landed")
    r.delete(q + "job:JOBchild2", q + "job:JOBchild3")
    r.zrem(q + "pending", "JOBchild2", "JOBchild3")
    r.hset(q + "job:JOBorphan", mapping={"state": "pending", "parent": "JOBparent"})
    r.zadd(q + "pending", {"JOBorphan": 0})
    assert visitor.get("/api/widgets/fanin/state").status_code == 200
    assert state_of(r, "fanin", sandbox) == landed
    assert not r.exists(q + "job:JOBorphan")
