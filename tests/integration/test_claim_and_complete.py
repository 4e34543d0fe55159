"""`jobs.claim_and_complete`: claim and the completion of the job the caller
expects claim to hand out, in one round trip; a wrong guess is fenced off by
the token and writes nothing, so the caller completes what it really got."""

from __future__ import annotations

from typing import Any

from server.emq import flows, jobs, keyspace

from .conftest import flow, members, row

Q = "orders"
NO_PARENT = jobs.lineage_of(Q, "JOBp", None, "fp")


async def dump_all(conn: Any) -> dict[str, bytes | None]:
    names = sorted(k.decode() if isinstance(k, bytes) else k for k in await conn.keys("*"))
    return {name: await conn.dump(name) for name in names}


async def test_a_right_guess_claims_and_completes_in_one_round_trip(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    tail: list[tuple[Any, ...]] = []
    got, done = await jobs.claim_and_complete(conn, Q, ("JOBa", 1), "ra", line=NO_PARENT, tail=tail)
    assert (got, done) == (("JOBa", 1), True)
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "1"
    assert await conn.hgetall(keyspace.processed_key(Q, "JOBp")) == {"JOBa": "ra"}
    assert await members(conn, Q, "active") == [] and await members(conn, Q, "pending") == ["JOBb"]
    assert tail == [("DEL", keyspace.logs_key(Q, "JOBa"))]  # the :logs DEL rides the caller's next trip


async def test_a_wrong_guess_writes_nothing_beyond_the_claim_and_names_the_job_handed_out(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    # what claim will do on its own, as a second queue shows it (claim first, then a dump)
    await flows.add(conn, "mirror", flow("JOBp", "JOBa", "JOBb"))
    # the guess names the second child: claim takes the first, so the completion must be refused
    got, done = await jobs.claim_and_complete(conn, Q, ("JOBb", 1), "rb", line=NO_PARENT)
    assert (got, done) == (("JOBa", 1), False)
    assert await jobs.claim(conn, "mirror") == ("JOBa", 1)
    assert await row(conn, Q, "JOBb") == await row(conn, "mirror", "JOBb")
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "2"
    assert await conn.exists(keyspace.processed_key(Q, "JOBp")) == 0
    assert await members(conn, Q, "active") == ["JOBa"]
    # the caller completes what it was handed, as a sequential click would
    await jobs.complete(conn, Q, "JOBa", 1, "ra")
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "1"


async def test_a_stale_token_guess_is_refused_and_the_claim_stands(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa"))
    got, done = await jobs.claim_and_complete(conn, Q, ("JOBa", 7), "ra", line=NO_PARENT)
    assert (got, done) == (("JOBa", 1), False)
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "1"
    assert await members(conn, Q, "active") == ["JOBa"]


async def test_an_empty_pending_claims_nothing_and_completes_nothing(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa"))
    await jobs.claim(conn, Q)
    before = await dump_all(conn)
    got, done = await jobs.claim_and_complete(conn, Q, ("JOBb", 1), "rb", line=NO_PARENT)
    assert (got, done) == (None, False)
    assert await dump_all(conn) == before


async def test_after_a_script_flush_both_run_in_order_and_the_guess_still_lands(conn) -> None:
    await flows.add(conn, Q, flow("JOBp", "JOBa", "JOBb"))
    await conn.script_flush()
    got, done = await jobs.claim_and_complete(conn, Q, ("JOBa", 1), "ra", line=NO_PARENT)
    assert (got, done) == (("JOBa", 1), True)
    assert await conn.get(keyspace.dependencies_key(Q, "JOBp")) == "1"
