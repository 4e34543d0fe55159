"""Trees walked host-side, level by level; the three pure reads."""

from __future__ import annotations

from server.emq import flows, jobs, keyspace, pump, results

from .conftest import all_keys, claim_all, dbsize, flow, members, row, where

Q, MAIL = "orders", "mail"


def two_level() -> dict[str, object]:
    return flow(
        "JOBroot",
        {"id": "JOBmid",
         "children": [{"id": "JOBleaf1", "payload": "l1"}, {"id": "JOBleaf2", "payload": "l2", "queue": MAIL}]},
        {"id": "JOBside", "queue": MAIL, "ignore_dependency_on_failure": True,
         "children": [{"id": "JOBleaf3", "payload": "l3"}]},
    )


async def test_a_tree_lands_parent_first_with_every_inner_node_held(conn) -> None:
    assert await flows.add(conn, Q, two_level()) == ("JOBroot", ["JOBmid", "JOBside"])
    assert (await row(conn, Q, "JOBroot"))["state"] == "awaiting_children"
    assert await results.dependencies(conn, Q, "JOBroot") == 2
    mid = await row(conn, Q, "JOBmid")
    assert mid == {
        "state": "awaiting_children", "attempts": "0", "payload": "p-JOBmid",
        "parent": "JOBroot", "parent_policy": "fp",
    }
    side = await row(conn, MAIL, "JOBside")
    assert side["parent"] == "JOBroot" and side["parent_queue"] == Q and side["parent_policy"] == "id"
    assert await results.dependencies(conn, Q, "JOBmid") == 2
    assert await results.dependencies(conn, MAIL, "JOBside") == 1
    for queue, held in ((Q, "JOBroot"), (Q, "JOBmid"), (MAIL, "JOBside")):
        assert await where(conn, queue, held) == []
    assert await members(conn, Q, "pending") == ["JOBleaf1"]
    assert await members(conn, MAIL, "pending") == ["JOBleaf2", "JOBleaf3"]
    assert (await row(conn, MAIL, "JOBleaf2"))["parent_queue"] == Q
    assert (await row(conn, MAIL, "JOBleaf3")) ["parent"] == "JOBside"
    assert "parent_queue" not in await row(conn, MAIL, "JOBleaf3")


async def test_a_two_level_tree_releases_level_by_level(conn) -> None:
    await flows.add(conn, Q, two_level())
    # leaves first
    for queue in (Q, MAIL):
        for job_id, token in (await claim_all(conn, queue)).items():
            await jobs.complete(conn, queue, job_id, token, result=f"r-{job_id}")
    # JOBside's leaf shares its queue: JOBside is pending already
    assert await where(conn, MAIL, "JOBside") == ["pending"]
    assert await where(conn, Q, "JOBmid") == []  # waits for the pumped leaf2
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 1
    assert await where(conn, Q, "JOBmid") == ["pending"]
    assert await where(conn, Q, "JOBroot") == []
    assert await results.children_values(conn, Q, "JOBmid") == {"JOBleaf1": "r-JOBleaf1", "JOBleaf2": "r-JOBleaf2"}
    # the inner nodes run, and their completions count towards the root
    mid_token = (await claim_all(conn, Q))["JOBmid"]
    await jobs.complete(conn, Q, "JOBmid", mid_token, result="mid done")
    assert await results.dependencies(conn, Q, "JOBroot") == 1
    side_token = (await claim_all(conn, MAIL))["JOBside"]
    await jobs.complete(conn, MAIL, "JOBside", side_token, result="side done")
    assert await where(conn, Q, "JOBroot") == []
    await pump.deliver_flow_completions(conn, MAIL, 10)
    assert await where(conn, Q, "JOBroot") == ["pending"]
    assert await results.children_values(conn, Q, "JOBroot") == {"JOBmid": "mid done", "JOBside": "side done"}


async def test_an_inner_node_dying_under_id_lets_the_root_proceed(conn) -> None:
    await flows.add(conn, Q, two_level())
    token = (await claim_all(conn, MAIL))["JOBleaf3"]
    await jobs.complete(conn, MAIL, "JOBleaf3", token)
    side_token = (await claim_all(conn, MAIL))["JOBside"]
    assert await jobs.fail(conn, MAIL, "JOBside", side_token, "side broke", 1) == "dead"
    await pump.deliver_flow_completions(conn, MAIL, 10)
    assert await results.ignored_failures(conn, Q, "JOBroot") == {"JOBside": "side broke"}
    assert await results.dependencies(conn, Q, "JOBroot") == 1


async def test_results_reads_write_nothing(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", {"id": "JOBb", "ignore_dependency_on_failure": True}, "JOBc"))
    tokens = await claim_all(conn, Q)
    await jobs.complete(conn, Q, "JOBa", tokens["JOBa"], result="A")
    await jobs.fail(conn, Q, "JOBb", tokens["JOBb"], "B broke", 1)

    async def snapshot() -> dict[str, bytes]:
        return {key: await conn.dump(key) for key in sorted(await all_keys(conn))}

    before_size, before = await dbsize(conn), await snapshot()
    assert await results.children_values(conn, Q, "JOBp") == {"JOBa": "A"}
    assert await results.dependencies(conn, Q, "JOBp") == 1
    assert await results.ignored_failures(conn, Q, "JOBp") == {"JOBb": "B broke"}
    # reads of a parent that does not exist answer empty, and create nothing
    assert await results.children_values(conn, Q, "JOBnone") == {}
    assert await results.dependencies(conn, Q, "JOBnone") == 0
    assert await results.ignored_failures(conn, Q, "JOBnone") == {}
    assert await dbsize(conn) == before_size
    assert await snapshot() == before
    assert await conn.exists(keyspace.processed_key(Q, "JOBnone")) == 0
