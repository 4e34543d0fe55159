"""The key grammar, the id gate, script headers, and the stepper's moves."""

from __future__ import annotations

import pytest

from server.emq import flows, keyspace, registry

from .conftest import all_keys, dbsize, flow, members


@pytest.mark.parametrize("bad", ["JOB{x}", "JOB:x", "JOB*", "JOB\n", "", "J" * 129])
async def test_flows_add_refuses_ill_formed_ids_before_any_write(conn, bad: str) -> None:
    for candidate in (flow(bad, "JOBa"), flow("JOBp", "JOBa", bad), flow("JOBp", {"id": "JOBa", "queue": bad})):
        with pytest.raises(keyspace.BadId):
            await flows.add(conn, "q", candidate)
    assert await dbsize(conn) == 0


def _enqueue_call(queue: str) -> tuple[list[str], list[str]]:
    keys = [
        keyspace.job_key(queue, "JOBp"),
        keyspace.dependencies_key(queue, "JOBp"),
        keyspace.queue_key(queue, "pending"),
        keyspace.job_key(queue, "JOBa"),
        keyspace.job_key(queue, "JOBb"),
    ]
    return keys, ["JOBp", "pp", "2", "JOBa", "pa", "JOBb", "pb"]


async def test_prefix_up_to_each_move_leaves_exactly_that_moves_keys(conn) -> None:
    children = {keyspace.job_key("s1", "JOBa"), keyspace.job_key("s1", "JOBb")}
    expected = {
        1: set(),
        2: children | {"emq:{s1}:pending"},
        3: children | {"emq:{s1}:pending", "emq:{s1}:job:JOBp"},
        4: children | {"emq:{s1}:pending", "emq:{s1}:job:JOBp", "emq:{s1}:job:JOBp:dependencies"},
    }
    for n, keys_after in expected.items():
        await conn.flushdb()
        keys, args = _enqueue_call("s1")
        await registry.run_prefix(conn, "enqueue_flow", n, keys, args)
        assert await all_keys(conn) == keys_after, f"after move {n}"
    assert await conn.get("emq:{s1}:job:JOBp:dependencies") == "2"
    assert await members(conn, "s1", "pending") == ["JOBa", "JOBb"]


async def test_prefix_of_move_one_refuses_a_non_job_id(conn) -> None:
    keys, args = _enqueue_call("s2")
    args[3] = "TASKa"
    with pytest.raises(Exception, match="EMQKIND job id must be JOB-namespaced"):
        await registry.run_prefix(conn, "enqueue_flow", 1, keys, args)
    assert await dbsize(conn) == 0


async def test_scripts_recover_after_script_flush(conn) -> None:
    await flows.add(conn, "q", flow("JOBp", "JOBa"))
    await conn.script_flush()
    await conn.flushdb()
    assert await flows.add(conn, "q", flow("JOBp", "JOBa")) == ("JOBp", ["JOBa"])
