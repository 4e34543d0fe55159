"""add_bulk: every id gated first, then flow after flow, landed ones in order."""

from __future__ import annotations

import random

import pytest

from server.emq import flows, jobs, keyspace, pump, results

from .conftest import all_keys, claim_all, dbsize, flow, members, row, where

Q = "orders"


def seed_batch(fourth_second_child: str = "TASK0KHTOWnGLuK") -> list[dict[str, object]]:
    """The course's four-flow batch in queue `orders`."""
    return [
        # 1: same-queue, lands whole
        flow("JOB0KHTOWnGLuA", "JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC"),
        # 2: cross-queue, lands
        flow("JOB0KHTOWnGLuD", {"id": "JOB0KHTOWnGLuE", "queue": "mail"}, "JOB0KHTOWnGLuF"),
        # 3: same-queue, refused by the kind law: writes nothing
        flow("JOB0KHTOWnGLuG", "JOB0KHTOWnGLuH", "TASK0KHTOWnGLuI"),
        # 4: cross-queue, stops at its second child
        flow("JOB0KHTOWnGLuJ", {"id": "JOB0KHTOWnGLuL", "queue": "billing"},
             {"id": fourth_second_child, "queue": "billing"}),
    ]


async def test_the_four_flow_batch(conn) -> None:
    landed = await flows.add_bulk(conn, Q, seed_batch())
    assert landed == [
        ("JOB0KHTOWnGLuA", ["JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC"]),
        ("JOB0KHTOWnGLuD", ["JOB0KHTOWnGLuE", "JOB0KHTOWnGLuF"]),
    ]
    # flow 1: children pending, parent held with 2
    assert set(await members(conn, Q, "pending")) >= {"JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC"}
    assert await results.dependencies(conn, Q, "JOB0KHTOWnGLuA") == 2
    # flow 2: held, its mail child pending there
    assert (await row(conn, Q, "JOB0KHTOWnGLuD"))["state"] == "awaiting_children"
    assert await members(conn, "mail", "pending") == ["JOB0KHTOWnGLuE"]
    # flow 3: nothing at all
    assert not [k for k in await all_keys(conn) if "GLuG" in k or "GLuH" in k or "GLuI" in k]
    # flow 4: parent held with 2, first child claimable in billing, second absent
    assert (await row(conn, Q, "JOB0KHTOWnGLuJ"))["state"] == "awaiting_children"
    assert await results.dependencies(conn, Q, "JOB0KHTOWnGLuJ") == 2
    assert await where(conn, Q, "JOB0KHTOWnGLuJ") == []
    assert await members(conn, "billing", "pending") == ["JOB0KHTOWnGLuL"]
    assert await conn.exists(keyspace.job_key("billing", "TASK0KHTOWnGLuK")) == 0
    assert await jobs.claim(conn, "billing") == ("JOB0KHTOWnGLuL", 1)


async def test_retrying_flow_four_by_id_runs_to_exactly_one_release(conn) -> None:
    await flows.add_bulk(conn, Q, seed_batch())
    # the landed child finishes before the retry
    token = (await claim_all(conn, "billing"))["JOB0KHTOWnGLuL"]
    await jobs.complete(conn, "billing", "JOB0KHTOWnGLuL", token, result="L")
    retry = seed_batch("JOB0KHTOWnGLuK")[3]
    assert await flows.add_bulk(conn, Q, [retry]) == [("JOB0KHTOWnGLuJ", ["JOB0KHTOWnGLuL", "JOB0KHTOWnGLuK"])]
    assert await members(conn, "billing", "pending") == ["JOB0KHTOWnGLuK"]
    token = (await claim_all(conn, "billing"))["JOB0KHTOWnGLuK"]
    await jobs.complete(conn, "billing", "JOB0KHTOWnGLuK", token, result="K")
    assert await pump.deliver_flow_completions(conn, "billing", 10) == 2
    assert await where(conn, Q, "JOB0KHTOWnGLuJ") == ["pending"]
    assert await results.children_values(conn, Q, "JOB0KHTOWnGLuJ") == {
        "JOB0KHTOWnGLuL": "L", "JOB0KHTOWnGLuK": "K",
    }
    # replays change nothing: the parent is released once
    await pump.deliver_flow_completions(conn, "billing", 10)
    assert await where(conn, Q, "JOB0KHTOWnGLuJ") == ["pending"]
    assert await results.dependencies(conn, Q, "JOB0KHTOWnGLuJ") == 0


@pytest.mark.parametrize("bad", ["JOB:x", "", "JOB{x}", "J" * 129])
@pytest.mark.parametrize("where_at", [0, 2, 3])
async def test_one_ill_formed_id_anywhere_lands_nothing(conn, bad: str, where_at: int) -> None:
    batch = seed_batch()
    batch[where_at]["children"][-1]["id"] = bad  # type: ignore[index]
    with pytest.raises(keyspace.BadId):
        await flows.add_bulk(conn, Q, batch)
    assert await dbsize(conn) == 0


async def test_a_malformed_flow_anywhere_lands_nothing(conn) -> None:
    batch = [*seed_batch(), {"parent": {"id": "JOBzz"}, "children": []}]
    with pytest.raises(flows.FlowShapeError):
        await flows.add_bulk(conn, Q, batch)
    assert await dbsize(conn) == 0


def long_batch(rng: random.Random, size: int) -> tuple[list[dict[str, object]], list[str]]:
    batch: list[dict[str, object]] = []
    expected: list[str] = []
    for i in range(size):
        parent = f"JOBf{i:04d}"
        refused = rng.random() < 0.2
        cross = rng.random() < 0.3
        last = f"TASKf{i:04d}c" if refused else f"JOBf{i:04d}c"
        second = {"id": last, "queue": "mail"} if cross else last
        batch.append(flow(parent, f"JOBf{i:04d}a", f"JOBf{i:04d}b", second))
        if not refused:
            expected.append(parent)
    return batch, expected


async def test_a_long_batch_returns_the_landed_flows_in_input_order(conn) -> None:
    batch, expected = long_batch(random.Random(7), 200)
    landed = await flows.add_bulk(conn, Q, batch)
    assert [parent for parent, _ in landed] == expected
    for parent, children in landed:
        assert children == [f"{parent}a", f"{parent}b", f"{parent}c"]
        assert await results.dependencies(conn, Q, parent) == 3
    # refused same-queue flows wrote nothing; refused cross-queue ones hold
    for spec in batch:
        parent = spec["parent"]["id"]  # type: ignore[index]
        if parent in expected:
            continue
        cross = isinstance(spec["children"][-1].get("queue"), str)  # type: ignore[index]
        exists = await conn.exists(keyspace.job_key(Q, parent))
        assert exists == (1 if cross else 0)
        if not cross:
            assert await conn.exists(keyspace.job_key(Q, f"{parent}a")) == 0


