"""The same-queue flow: atomic add, held parent, the fan-in inside complete."""

from __future__ import annotations

import asyncio

import pytest

from server.emq import errors, flows, jobs, keyspace, registry, results

from .conftest import all_keys, claim_all, dbsize, flow, members, row, where

Q = "orders"


async def test_add_lands_claimable_children_and_a_held_parent(conn) -> None:
    landed = await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb", "JOBc"))
    assert landed == ("JOBp", ["JOBa", "JOBb", "JOBc"])
    assert await members(conn, Q, "pending") == ["JOBa", "JOBb", "JOBc"]
    assert await row(conn, Q, "JOBa") == {
        "state": "pending", "attempts": "0", "payload": "p-JOBa", "parent": "JOBp", "parent_policy": "fp",
    }
    assert await row(conn, Q, "JOBp") == {"state": "awaiting_children", "attempts": "0", "payload": "p-JOBp"}
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "3"
    # the held parent is in none of the four state sets
    assert await where(conn, Q, "JOBp") == []


async def test_claim_never_returns_a_held_parent(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    assert set(await claim_all(conn, Q)) == {"JOBa", "JOBb"}
    assert await jobs.claim(conn, Q) is None
    assert await where(conn, Q, "JOBp") == []


@pytest.mark.parametrize("position", ["parent", "first child", "last child"])
async def test_a_non_job_id_anywhere_writes_nothing(conn, position: str) -> None:
    ids = {"parent": "JOBp", "first child": "JOBa", "last child": "JOBc"}
    ids[position] = "TASK" + ids[position][3:]
    with pytest.raises(errors.KindRefused) as refused:
        await flows.add(conn, Q, flow(ids["parent"], ids["first child"], "JOBb", ids["last child"]))
    assert "EMQKIND job id must be JOB-namespaced" in str(refused.value)
    assert refused.value.code == "EMQKIND"
    assert await dbsize(conn) == 0


async def test_shape_errors_are_raised_before_any_write(conn) -> None:
    bad_flows = [
        None,
        {"children": [{"id": "JOBa", "payload": "x"}]},
        {"parent": {"id": "JOBp"}, "children": [{"id": "JOBa", "payload": "x"}]},
        {"parent": {"id": "JOBp", "payload": "x"}, "children": []},
        {"parent": {"id": "JOBp", "payload": "x"}, "children": "JOBa"},
        {"parent": {"id": "JOBp", "payload": "x"}, "children": [{"id": "JOBa"}]},
        {"parent": {"id": "JOBp", "payload": "x"}, "children": [{"id": "JOBa", "payload": 3}]},
        {"parent": {"id": "JOBp", "payload": "x"}, "children": [{"payload": "x"}]},
        flow("JOBp", "JOBa", "JOBa"),
        flow("JOBp", {"id": "JOBa", "fail_parent_on_failure": "yes"}),
    ]
    for bad in bad_flows:
        with pytest.raises(flows.FlowShapeError):
            await flows.add(conn, Q, bad)
    assert await dbsize(conn) == 0


async def test_dict_payloads_are_json_encoded(conn) -> None:
    await flows.add(
        conn, Q, {"parent": {"id": "JOBp", "payload": {"b": 1}}, "children": [{"id": "JOBa", "payload": [1, 2]}]}
    )
    assert (await row(conn, Q, "JOBp"))["payload"] == '{"b":1}'
    assert (await row(conn, Q, "JOBa"))["payload"] == "[1,2]"


async def test_parent_released_once_after_the_last_completion(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    tokens = await claim_all(conn, Q)
    await jobs.complete(conn, Q, "JOBa", tokens["JOBa"], result="ra")
    assert await results.dependencies(conn, Q, "JOBp") == 1
    assert await where(conn, Q, "JOBp") == []
    await jobs.complete(conn, Q, "JOBb", tokens["JOBb"])
    assert await results.dependencies(conn, Q, "JOBp") == 0
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert (await row(conn, Q, "JOBp"))["state"] == "pending"
    # the result defaults to the child's own id
    assert await results.children_values(conn, Q, "JOBp") == {"JOBa": "ra", "JOBb": "JOBb"}
    assert await conn.exists(keyspace.job_key(Q, "JOBa")) == 0
    assert await conn.hget(keyspace.metrics_key(Q), "count") == "2"
    assert await jobs.claim(conn, Q) == ("JOBp", 1)


async def test_concurrent_redelivered_and_stale_completions_release_once(conn, conn_factory) -> None:
    children = [f"JOB{i:02d}" for i in range(8)]
    await flows.add(conn, Q, flow("JOBparent", *children))
    tokens = await claim_all(conn, Q)
    clients = [await conn_factory() for _ in range(4)]

    async def attempt(i: int, job_id: str, token: int) -> str:
        try:
            await jobs.complete(clients[i % len(clients)], Q, job_id, token, result=f"r{job_id}")
            return "ok"
        except jobs.Stale:
            return "stale"
        except jobs.Gone:
            return "gone"

    calls = []
    for i, job_id in enumerate(children):
        calls.append(attempt(i, job_id, tokens[job_id] + 1))  # stale token first
        calls.append(attempt(i + 1, job_id, tokens[job_id]))
        calls.append(attempt(i + 2, job_id, tokens[job_id]))  # a redelivery
    outcomes = await asyncio.gather(*calls)
    for i in range(len(children)):
        trio = outcomes[3 * i : 3 * i + 3]
        # the stale one is stale unless the row was already gone; exactly one ok
        assert trio.count("ok") == 1
        assert trio[0] in ("stale", "gone")
    assert await results.children_values(conn, Q, "JOBparent") == {c: f"r{c}" for c in children}
    assert await results.dependencies(conn, Q, "JOBparent") == 0
    assert await members(conn, Q, "pending") == ["JOBparent"]
    assert await conn.hget(keyspace.metrics_key(Q), "count") == str(len(children))
    # after success the same completion is Gone, the parent stays released once
    with pytest.raises(jobs.Gone):
        await jobs.complete(conn, Q, children[0], tokens[children[0]])
    assert await members(conn, Q, "pending") == ["JOBparent"]


async def test_missing_row_is_gone_and_a_wrong_token_is_stale(conn) -> None:
    with pytest.raises(jobs.Gone):
        await jobs.complete(conn, Q, "JOBnope", 1)
    with pytest.raises(jobs.Gone):
        await jobs.fail(conn, Q, "JOBnope", 1, "boom", 3)
    await flows.add(conn, Q, flow("JOBp", "JOBa"))
    (job_id, token), = (await claim_all(conn, Q)).items()
    before = await all_keys(conn)
    with pytest.raises(jobs.Stale, match="EMQSTALE complete token mismatch"):
        await jobs.complete(conn, Q, job_id, token + 1)
    with pytest.raises(jobs.Stale, match="EMQSTALE fail token mismatch"):
        await jobs.fail(conn, Q, job_id, token + 1, "boom", 3)
    assert await all_keys(conn) == before
    assert (await row(conn, Q, job_id))["state"] == "active"
    assert issubclass(jobs.Stale, errors.EmqError) and issubclass(jobs.Gone, errors.EmqError)


async def test_completion_deletes_the_logs_key(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa"))
    await conn.rpush(keyspace.logs_key(Q, "JOBa"), "started", "working")
    token = (await claim_all(conn, Q))["JOBa"]
    await jobs.complete(conn, Q, "JOBa", token)
    assert await conn.exists(keyspace.logs_key(Q, "JOBa")) == 0


async def test_a_flat_job_completes_without_a_fan_in(conn) -> None:
    await conn.hset(keyspace.job_key(Q, "JOBflat"), mapping={"state": "pending", "attempts": "0", "payload": "x"})
    await conn.zadd(keyspace.queue_key(Q, "pending"), {"JOBflat": 0})
    job_id, token = await jobs.claim(conn, Q, lease_ms=5000)
    score = await conn.zscore(keyspace.queue_key(Q, "active"), job_id)
    assert score is not None and score > 0
    await jobs.complete(conn, Q, job_id, token)
    assert await all_keys(conn) == {keyspace.metrics_key(Q)}


async def test_the_api_works_on_a_bytes_client(raw_conn) -> None:
    assert await flows.add(raw_conn, Q, flow("JOBp", "JOBa", "JOBb")) == ("JOBp", ["JOBa", "JOBb"])
    first = await jobs.claim(raw_conn, Q)
    assert first == ("JOBa", 1)
    await jobs.complete(raw_conn, Q, "JOBa", 1, result="A")
    job_id, token = await jobs.claim(raw_conn, Q)
    assert await jobs.fail(raw_conn, Q, job_id, token, "boom", 2) == "scheduled"
    assert await results.children_values(raw_conn, Q, "JOBp") == {"JOBa": "A"}
    assert await results.dependencies(raw_conn, Q, "JOBp") == 1
    assert await results.ignored_failures(raw_conn, Q, "JOBp") == {}
    with pytest.raises(errors.KindRefused, match="EMQKIND"):
        await flows.add(raw_conn, Q, flow("JOBq", "TASKz"))
    with pytest.raises(jobs.Gone):
        await jobs.complete(raw_conn, Q, "JOBa", 1)


async def test_the_seeds_literal_evalsha_line_runs_the_fan_in_on_complete_lua(conn) -> None:
    """The seed's line, word for word with q, child, parent, token and result
    filled in, sent by hand: it must be the layout complete.lua takes."""
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    tokens = await claim_all(conn, Q)
    sha = await conn.script_load(registry.script_source("complete"))
    assert sha == registry.script("complete").sha
    line = (
        f"EVALSHA {sha} 5 emq:{{orders}}:active emq:{{orders}}:job:JOBa "
        "emq:{orders}:job:JOBp:dependencies emq:{orders}:job:JOBp:processed emq:{orders}:job:JOBp "
        f"JOBa {tokens['JOBa']} emq:{{orders}}: JOBp result-a"
    )
    assert await conn.execute_command(*line.split(" ")) == 1
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "1"
    assert await conn.hgetall(keyspace.processed_key(Q, "JOBp")) == {"JOBa": "result-a"}
    assert not await conn.exists(keyspace.job_key(Q, "JOBa"))  # the row retired
    assert await members(conn, Q, "active") == ["JOBb"]
    assert (await row(conn, Q, "JOBp"))["state"] == "awaiting_children"
    # the same line for the last child releases the parent
    last = line.replace("JOBa", "JOBb").replace(f" {tokens['JOBa']} ", f" {tokens['JOBb']} ")
    assert await conn.execute_command(*last.replace("result-a", "result-b").split(" ")) == 1
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "0"
    assert await results.children_values(conn, Q, "JOBp") == {"JOBa": "result-a", "JOBb": "result-b"}
    assert await members(conn, Q, "pending") == ["JOBp"]
    assert (await row(conn, Q, "JOBp"))["state"] == "pending"
