"""The registry's include step: shared Lua rules written once, expanded before registering."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from server.emq import flows, includes, jobs, pump, registry
from tests.lua_folder import write_script

from .conftest import flow


async def test_the_registry_refuses_a_script_with_a_missing_include_before_any_wire(conn, scripts_dir: Path) -> None:
    write_script(
        scripts_dir, "broken", "-- broken: takes a helper that is not there\n\n-- @include nowhere\nreturn 1\n"
    )
    with pytest.raises(includes.IncludeError, match=r"broken.lua line 3: '-- @include nowhere' names no file"):
        registry.script_source("broken")
    with pytest.raises(includes.IncludeError):
        await registry.run(conn, "broken", [], [])
    assert await conn.script_exists(hashlib.sha1(b"return 1\n").hexdigest()) == [False]


async def test_the_registry_runs_a_script_with_its_helper_expanded(conn, scripts_dir: Path) -> None:
    write_script(scripts_dir / "includes", "twice", "local function twice(x) return 2 * tonumber(x) end")
    write_script(scripts_dir, "doubled", "-- doubled: twice ARGV[1]\n\n-- @include twice\nreturn twice(ARGV[1])\n")
    assert await registry.run(conn, "doubled", [], ["21"]) == 42
    assert await conn.script_exists(registry.script("doubled").sha) == [True]


async def test_the_registered_script_is_the_expanded_text_by_its_sha(conn) -> None:
    await flows.add(conn, "orders", flow("JOBp", "JOBa"))
    got = await jobs.claim(conn, "orders")
    assert got is not None
    await jobs.complete(conn, "orders", *got)
    for name in ("enqueue_flow", "claim", "complete"):
        expected = hashlib.sha1(registry.script_source(name).encode("utf-8")).hexdigest()
        assert registry.script(name).sha == expected
        assert registry.script(name).sha == expected
        assert await conn.script_exists(expected) == [True]
    # the file as written is not what runs: its SHA is unknown to the server
    raw_sha = hashlib.sha1(registry.file_source("complete").encode("utf-8")).hexdigest()
    assert await conn.script_exists(raw_sha) == [False]


async def _server_ms(conn) -> int:
    seconds, micros = await conn.time()
    return int(seconds) * 1000 + int(micros) // 1000


async def test_a_failed_parent_enters_dead_scored_by_the_servers_now_ms_on_one_queue_and_across(conn) -> None:
    await flows.add(conn, "orders", flow("JOBp", "JOBa"))
    await flows.add(conn, "orders", flow("JOBq", {"id": "JOBb", "queue": "mail"}))
    before = await _server_ms(conn)
    for queue in ("orders", "mail"):
        got = await jobs.claim(conn, queue)
        assert got is not None
        assert await jobs.fail(conn, queue, got[0], got[1], "boom", 1) == "dead"
    assert await pump.deliver_flow_completions(conn, "mail", 10) == 1
    after = await _server_ms(conn)
    for parent in ("JOBp", "JOBq"):
        score = await conn.zscore("emq:{orders}:dead", parent)
        assert score is not None and before <= score <= after, parent
        assert await conn.hget(f"emq:{{orders}}:job:{parent}", "state") == "failed"
