"""The Pump: page, deliver, compare-and-trim; poison entries and aging."""

from __future__ import annotations

import asyncio

from server.emq import flows, jobs, keyspace, pump, results

from .conftest import claim_all, flow, members

Q, MAIL = "orders", "mail"


async def _complete_all(conn, queue: str) -> None:
    for job_id, token in (await claim_all(conn, queue)).items():
        await jobs.complete(conn, queue, job_id, token, result=f"r-{job_id}")


async def _outbox(conn, queue: str) -> list[str]:
    return await pump.read_all(conn, queue)


async def test_a_crash_before_trim_redelivers_harmlessly(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", {"id": "JOBa", "queue": MAIL}, {"id": "JOBb", "queue": MAIL}))
    await _complete_all(conn, MAIL)
    page = await pump.read_page(conn, MAIL, 10)
    assert len(page) == 2
    # crash: delivered, never trimmed
    assert await pump.deliver_page(conn, MAIL, page) == pump.DeliveryReport(2, 0, None)
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 2
    assert await members(conn, Q, "pending") == ["JOBp"]
    # the next tick delivers the same page again: all duplicates, then trims
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 2
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 0
    assert await results.dependencies(conn, Q, "JOBp") == 0
    assert await members(conn, Q, "pending") == ["JOBp"]


async def test_pages_deliver_batch_entries_at_a_time(conn) -> None:
    children = [{"id": f"JOBc{i}", "queue": MAIL} for i in range(5)]
    await flows.add(conn, Q, flow("JOBp", *children))
    await _complete_all(conn, MAIL)
    assert await pump.deliver_flow_completions(conn, MAIL, 2) == 2
    assert await results.dependencies(conn, Q, "JOBp") == 3
    assert await pump.deliver_flow_completions(conn, MAIL, 2) == 2
    assert await pump.deliver_flow_completions(conn, MAIL, 2) == 1
    assert await pump.deliver_flow_completions(conn, MAIL, 2) == 0
    assert await members(conn, Q, "pending") == ["JOBp"]


async def _poisoned_outbox(conn) -> tuple[str, str]:
    """Outbox of MAIL: [entry for JOBa, poison, entry for JOBb]."""
    await flows.add(conn, Q, flow("JOBp", {"id": "JOBa", "queue": MAIL}, {"id": "JOBb", "queue": MAIL}))
    tokens = await claim_all(conn, MAIL)
    await jobs.complete(conn, MAIL, "JOBa", tokens["JOBa"])
    poison = "{not json"
    await conn.rpush(keyspace.outbox_key(MAIL), poison)
    await jobs.complete(conn, MAIL, "JOBb", tokens["JOBb"])
    behind = (await _outbox(conn, MAIL))[-1]
    return poison, behind


async def test_a_poison_entry_blocks_only_what_stands_behind_it(conn) -> None:
    poison, behind = await _poisoned_outbox(conn)
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 1  # never raises
    assert await _outbox(conn, MAIL) == [poison, behind]
    assert await results.children_values(conn, Q, "JOBp") == {"JOBa": "JOBa"}
    for _ in range(3):
        assert await pump.deliver_flow_completions(conn, MAIL, 10) == 0
    assert await _outbox(conn, MAIL) == [poison, behind]
    report = await pump.deliver_page(conn, MAIL, await pump.read_page(conn, MAIL, 10))
    assert report == pump.DeliveryReport(0, 0, poison)
    assert await results.dependencies(conn, Q, "JOBp") == 1


async def test_an_entry_for_a_missing_parent_is_undeliverable(conn) -> None:
    ghost = pump.encode_entry(pump.OutboxEntry("completed", "JOBa", MAIL, "x", "JOBnobody", Q, "fp"))
    await conn.rpush(keyspace.outbox_key(MAIL), ghost)
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 0
    assert await _outbox(conn, MAIL) == [ghost]
    assert await conn.exists(keyspace.processed_key(Q, "JOBnobody")) == 0


async def test_the_aged_tick_sets_a_stuck_head_aside_and_moves_on(conn) -> None:
    poison, behind = await _poisoned_outbox(conn)
    # max_blocked=2: two aged ticks count it, the third sets it aside
    assert await pump.deliver_flow_completions_aged(conn, MAIL, 10, 2) == 1
    assert await conn.hget(keyspace.outbox_head_key(MAIL), "count") == "1"
    assert await pump.deliver_flow_completions_aged(conn, MAIL, 10, 2) == 0
    assert await conn.hget(keyspace.outbox_head_key(MAIL), "count") == "2"
    assert await _outbox(conn, MAIL) == [poison, behind]
    # third tick: past the bound, moved aside, and the entry behind it delivers
    assert await pump.deliver_flow_completions_aged(conn, MAIL, 10, 2) == 1
    assert await _outbox(conn, MAIL) == []
    assert await conn.lrange(keyspace.poison_key(MAIL), 0, -1) == [poison]
    assert await conn.exists(keyspace.outbox_head_key(MAIL)) == 0
    assert await members(conn, Q, "pending") == ["JOBp"]


async def test_a_new_blocked_head_starts_its_count_over(conn) -> None:
    await conn.rpush(keyspace.outbox_key(MAIL), "poison-1", "poison-2")
    await pump.deliver_flow_completions_aged(conn, MAIL, 10, 1)
    assert await conn.hget(keyspace.outbox_head_key(MAIL), "entry") == "poison-1"
    # second tick: poison-1 set aside; poison-2 then blocks and is counted once
    await pump.deliver_flow_completions_aged(conn, MAIL, 10, 1)
    assert await conn.lrange(keyspace.poison_key(MAIL), 0, -1) == ["poison-1"]
    assert await conn.hgetall(keyspace.outbox_head_key(MAIL)) == {"entry": "poison-2", "count": "1"}
    await pump.deliver_flow_completions_aged(conn, MAIL, 10, 1)
    assert await conn.lrange(keyspace.poison_key(MAIL), 0, -1) == ["poison-1", "poison-2"]
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 0


async def test_non_utf8_poison_never_raises(conn, raw_conn) -> None:
    await raw_conn.rpush(keyspace.outbox_key(MAIL), b"\xff\xfe\xfd")
    assert await pump.deliver_flow_completions(conn, MAIL, 10) == 0
    assert await pump.deliver_flow_completions_aged(conn, MAIL, 10, 0) == 0
    assert await raw_conn.lrange(keyspace.poison_key(MAIL), 0, -1) == [b"\xff\xfe\xfd"]
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 0


async def test_trim_removes_only_the_delivered_prefix_still_at_the_head(conn) -> None:
    await conn.rpush(keyspace.outbox_key(MAIL), "a", "b", "c")
    assert await pump.trim(conn, MAIL, ["a", "b"]) == 2
    assert await pump.trim(conn, MAIL, ["a", "b"]) == 0  # a second pump's late trim
    assert await pump.trim(conn, MAIL, ["c", "d"]) == 1
    assert await pump.trim(conn, MAIL, []) == 0


async def test_concurrent_pumps_never_lose_an_entry(conn, conn_factory) -> None:
    parents = [f"JOBp{i}" for i in range(6)]
    for parent in parents:
        await flows.add(conn, Q, flow(parent, *[{"id": f"JOB{parent}c{j}", "queue": MAIL} for j in range(5)]))
    await _complete_all(conn, MAIL)
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 30
    clients = [await conn_factory() for _ in range(4)]

    async def pump_until_empty(client) -> None:
        for _ in range(200):
            await pump.deliver_flow_completions(client, MAIL, 4)
            if not await client.llen(keyspace.outbox_key(MAIL)):
                return

    await asyncio.gather(*(pump_until_empty(client) for client in clients))
    assert await conn.llen(keyspace.outbox_key(MAIL)) == 0
    for parent in parents:
        assert await results.dependencies(conn, Q, parent) == 0
        assert len(await results.children_values(conn, Q, parent)) == 5
    assert sorted(await members(conn, Q, "pending")) == sorted(parents)
