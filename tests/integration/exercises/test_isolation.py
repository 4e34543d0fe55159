"""The grader's isolation test: nothing a learner's script leaves behind reaches the next run.

Every trick below runs on a pool of ONE grader, then another learner's
correct script runs on that same grader and must pass every check. After
it, the grader's admin reads the Lua VM's state: it must be a fresh VM's
(the collector's pause, cjson's settings, no global, no function), so the
test sees the reset itself and not only a lucky verdict. Some tricks are
refused by the engine itself (9.1.2 makes ``_G``, the libraries and the
basic types' metatables read-only, and has no ``newproxy``); they are kept,
so the guarantee does not rest on one engine version's protections.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from server.exercises import GraderPool, PoolSettings, grade
from tests.integration.exercises.support import COURSE, sandbox

TRICKS = {
    "the string metatable changed": "getmetatable('').__index = function() return function() return 'x' end end",
    "string.format and table.insert replaced": "string.format = nil table.insert = function() end",
    "rawset on the string library": "rawset(string, 'sub', function() return '' end) return 1",
    "a newproxy finalizer": ("local p = newproxy(true) getmetatable(p).__gc = function() "
                             "redis.call('SET', KEYS[1], 'hijacked') end return 1"),
    "a __gc on a table with a live reference": ("local t = setmetatable({}, {__gc = function() claimed = 1 end}) "
                                                "_G.keep = t return 1"),
    "a global": "claimed = 'nothing for you' return 1",
    "rawset on _G": "rawset(_G, 'tostring', function() return 'x' end) return 1",
    "_G's metatable replaced": "setmetatable(_G, {__index = function() return 'x' end}) return 1",
    "redis.call overridden": "redis.call = function() return 0 end return 1",
    "rawset on redis": "rawset(redis, 'call', function() return 0 end) rawset(redis, 'pcall', nil) return 1",
    "cjson's settings": ("cjson.encode_max_depth(1) cjson.decode_max_depth(1) cjson.encode_number_precision(1) "
                         "cjson.encode_sparse_array(true, 0, 0) cjson.encode_invalid_numbers(true) return 1"),
    "the collector stopped": "collectgarbage('stop') collectgarbage('setpause', 1000) return 1",
    "math.random seeded": "math.randomseed(7) return math.random(100)",
    "a loaded function kept": "local f = loadstring('claimed = 1') f() return 1",
    "a function loaded into the functions' VM": (
        "return redis.call('FUNCTION', 'LOAD', '#!lua name=spy\\nserver.register_function(\"spy\", "
        "function() return 1 end)')"),
    "a reply nested too deep": "local t = {} local c = t for i = 1, 5000 do c[1] = {} c = c[1] end return t",
    "a runaway loop": "while true do end",
    "a loop after a write": "redis.call('SET', KEYS[2], 'x') while true do end",
}

# What a fresh VM answers; every trick above that the engine lets through changes one of these.
PROBE = """
local pause = collectgarbage('setpause', 200)
local deep = pcall(cjson.encode, {{{1}}})
local precise = cjson.encode({0.123456789})
local sparse = cjson.encode({[4] = 1})
local global = rawget(_G, 'claimed') == nil and rawget(_G, 'keep') == nil
local fmt = string.format('%d', 7)
return {pause, tostring(deep), precise, sparse, tostring(global), fmt}
"""
FRESH = [200, b"true", b"[0.123456789]", b"[null,null,null,1]", b"true", b"7"]


@pytest.fixture(scope="module")
async def one() -> AsyncIterator[GraderPool]:
    settings = PoolSettings(graders=1, sandbox_in_flight=4, sandbox_burst=100, sandbox_per_minute=6000)
    async with GraderPool(settings) as started:
        yield started


async def until_up(pool: GraderPool) -> None:
    deadline = time.monotonic() + 5.0  # liveness: a restart takes a few tens of ms
    while pool.status().free < 1 and time.monotonic() < deadline:  # noqa: ASYNC110 -- the pool's own count
        await asyncio.sleep(0.01)
    assert pool.status().free == 1


@pytest.mark.parametrize("trick", list(TRICKS))
@pytest.mark.parametrize("exercise", ["fan-in", "deliver"])
async def test_a_learners_trick_leaves_nothing_to_the_next_run_on_the_same_grader(
    one: GraderPool, trick: str, exercise: str
) -> None:
    await grade(one, exercise, TRICKS[trick], run_for=sandbox())  # its own verdict does not matter
    await until_up(one)
    graded = await grade(one, exercise, COURSE[exercise], run_for=sandbox())
    assert [c.passed for c in graded.checks] == [True] * graded.total, [c.said for c in graded.checks]

    admin = aioredis.Redis.from_url(one.graders[0].url)
    try:
        assert await admin.eval(PROBE, 0) == FRESH
        assert await admin.execute_command("FUNCTION", "LIST") == []
    finally:
        await admin.aclose()


async def test_every_run_starts_on_a_fresh_lua_vm_even_after_a_run_the_engine_let_change_it(one: GraderPool) -> None:
    # what 9.1.2 lets a script change: seen changed by the next script on the same VM...
    admin = aioredis.Redis.from_url(one.graders[0].url)
    try:
        await admin.eval("cjson.encode_max_depth(1) cjson.encode_number_precision(1) "
                         "collectgarbage('setpause', 1000) return 1", 0)
        changed = await admin.eval(PROBE, 0)
        assert changed[0] == 1000 and changed[1] == b"false" and changed[2] == b"[0.1]"
        # ...and gone once a run has started on it
        graded = await grade(one, "fan-in", COURSE["fan-in"], run_for=sandbox())
        assert graded.passed == graded.total
        assert await admin.eval(PROBE, 0) == FRESH
    finally:
        await admin.aclose()
