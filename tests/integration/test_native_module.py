"""The EMQ module on a real valkey-server (and on every primary of a cluster).

EMQ.COMPLETE and EMQ.FAIL: each reply, the whole keyspace byte for byte
(DUMP and PTTL of every key) unchanged by every refusal, and a flat job
completed or failed natively leaving the keys the scripts leave on a twin
queue.
"""

from __future__ import annotations

from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

from server.emq import flows, jobs, keyspace
from server.valkey import native
from tests.integration.conftest import all_keys, flow, row

Q, TWIN = "native", "twin"
FLAT_ARGS = 3  # complete: id token base


async def keyspace_bytes(conn: Any) -> dict[str, tuple[bytes, int]]:
    """Every key of the keyspace: name -> (DUMP, PTTL)."""
    return {name: (await conn.dump(name), await conn.pttl(name)) for name in sorted(await all_keys(conn))}


def route(conn: Any, parts: tuple[Any, ...]) -> dict[str, Any]:
    """A cluster client sends a line by its keys (the module reports them, as
    EVAL's follow numkeys); a line with no key behind numkeys goes to the node
    of this test's queue."""
    has_keys = len(parts) > 2 and str(parts[1]).isdigit() and int(parts[1]) > 0
    if not isinstance(conn, RedisCluster) or has_keys:
        return {}
    return {"target_nodes": conn.get_node_from_key(keyspace.queue_key(Q, "active"))}


async def refused(conn: Any, *parts: Any) -> str:
    """Send a line that must be refused; its error text, the keyspace unchanged."""
    before = await keyspace_bytes(conn)
    with pytest.raises(ResponseError) as caught:
        await conn.execute_command(*parts, **route(conn, parts))
    assert await keyspace_bytes(conn) == before
    return str(caught.value)


async def answered(conn: Any, *parts: Any) -> Any:
    """Send a line answered without an error and without a write."""
    before = await keyspace_bytes(conn)
    reply = await conn.execute_command(*parts)
    assert await keyspace_bytes(conn) == before
    return reply


async def claimed_child(conn: Any, queue: str = Q) -> tuple[str, int]:
    """A same-queue flow, JOBp on JOBc1 and JOBc2, with JOBc1 claimed."""
    await flows.add(conn, queue, flow("JOBp", "JOBc1", "JOBc2"))
    got = await jobs.claim(conn, queue)
    assert got is not None and got[0] == "JOBc1"
    return got


async def claimed_flat(conn: Any, queue: str, job_id: str = "JOBflat", attempts: int = 0) -> int:
    """A flat job (row and pending entry), then the real claim: its token."""
    await conn.hset(
        keyspace.job_key(queue, job_id), mapping={"state": "pending", "attempts": str(attempts), "payload": "x"}
    )
    await conn.zadd(keyspace.queue_key(queue, "pending"), {"JOBwaiting": 1, job_id: 0})
    await conn.hset(
        keyspace.job_key(queue, "JOBwaiting"), mapping={"state": "pending", "attempts": "0", "payload": "y"}
    )
    got = await jobs.claim(conn, queue)
    assert got is not None and got[0] == job_id
    return got[1]


def flat_complete(queue: str, job_id: str, token: Any) -> list[Any]:
    keys, args = jobs.complete_call(queue, job_id, token, jobs.Lineage(mode=""))
    return ["EMQ.COMPLETE", 2, *keys[:2], *args[:FLAT_ARGS]]


def flat_fail(queue: str, job_id: str, token: Any, error: str = "boom", max_attempts: int = 3) -> list[Any]:
    keys = [keyspace.queue_key(queue, s) for s in ("active",)] + [keyspace.job_key(queue, job_id)]
    keys += [keyspace.queue_key(queue, "schedule"), keyspace.queue_key(queue, "dead")]
    return ["EMQ.FAIL", 4, *keys, job_id, str(token), error, str(max_attempts), "1000", keyspace.base(queue)]


def child_line(queue: str, child: str, token: int) -> tuple[list[str], list[str]]:
    """The KEYS and ARGV jobs.complete sends for a same-queue flow child."""
    line = jobs.Lineage(mode="sq", parent="JOBp", parent_queue=queue)
    return jobs.complete_call(queue, child, token, line, "done")


def renamed(found: dict[str, tuple[bytes, int]], queue: str) -> dict[str, bytes]:
    """Keys of one queue with the queue's name taken out (PTTL must be none)."""
    tag = "{" + queue + "}"
    assert all(ttl == -1 for _, ttl in found.values())
    return {name.replace(tag, "{*}"): dumped for name, (dumped, _) in found.items() if tag in name}


# ---- loading -----------------------------------------------------------------

async def test_the_managed_valkey_server_loads_the_emq_module(conn) -> None:
    assert native.built()
    assert await native.loaded(conn)
    assert await native.ensure_loaded(conn) is True
    if isinstance(conn, RedisCluster):  # every primary, not only the one asked
        for node in conn.get_primaries():
            listing = await conn.execute_command("MODULE", "LIST", target_nodes=node)
            assert "emq" in native.module_names(listing), node.name


# ---- EMQ.COMPLETE ----------------------------------------------------------

async def test_complete_refuses_the_same_queue_flow_line_straight_after_numkeys(conn) -> None:
    child, token = await claimed_child(conn)
    keys, args = child_line(Q, child, token)
    assert len(keys) == 5
    assert await refused(conn, "EMQ.COMPLETE", 5, *keys, *args) == "EMQSTATE complete flow not native"
    # before the shape check: a five-key count with no keys behind it, and
    # before the fence: a stale token, are refused the same way
    assert await refused(conn, "EMQ.COMPLETE", 5, keys[0]) == "EMQSTATE complete flow not native"
    stale = [*args[:1], "99", *args[2:]]
    assert await refused(conn, "EMQ.COMPLETE", 5, *keys, *stale) == "EMQSTATE complete flow not native"


async def test_complete_refuses_the_cross_queue_layout_straight_after_numkeys(conn) -> None:
    child, token = await claimed_child(conn)
    keys = [keyspace.queue_key(Q, "active"), keyspace.job_key(Q, child), keyspace.outbox_key(Q)]
    args = [child, str(token), keyspace.base(Q), "JOBp", "done", "xq", "elsewhere", "fp"]
    assert await refused(conn, "EMQ.COMPLETE", 3, *keys, *args) == "EMQSTATE complete flow not native"
    assert await refused(conn, "EMQ.COMPLETE", 3) == "EMQSTATE complete flow not native"


async def test_the_flat_form_on_a_flow_child_reads_the_row_then_refuses_it(conn) -> None:
    child, token = await claimed_child(conn)
    assert await refused(conn, *flat_complete(Q, child, token)) == "EMQSTATE complete flow not native"
    assert await refused(conn, *flat_complete(Q, child, token + 1)) == "EMQSTALE complete token mismatch"
    assert await answered(conn, *flat_complete(Q, "JOBnowhere", 1)) == 0


async def test_a_flat_job_completed_natively_leaves_what_complete_lua_leaves_on_a_twin(conn) -> None:
    native_token = await claimed_flat(conn, Q)
    script_token = await claimed_flat(conn, TWIN)
    assert await conn.execute_command(*flat_complete(Q, "JOBflat", native_token)) == 1
    await jobs.complete(conn, TWIN, "JOBflat", script_token)
    found = await keyspace_bytes(conn)
    assert renamed(found, Q) == renamed(found, TWIN)
    assert await row(conn, Q, "JOBflat") == {}
    assert await conn.hgetall(keyspace.metrics_key(Q)) == {"count": "1"}
    # a second completion finds no row: 0, and nothing is written
    assert await answered(conn, *flat_complete(Q, "JOBflat", native_token)) == 0


async def test_the_flat_complete_form_answers_emqstale_for_a_wrong_token(conn) -> None:
    token = await claimed_flat(conn, Q)
    assert await refused(conn, *flat_complete(Q, "JOBflat", token + 1)) == "EMQSTALE complete token mismatch"


async def test_complete_refuses_every_other_shape_before_any_write(conn) -> None:
    token = await claimed_flat(conn, Q)
    line = flat_complete(Q, "JOBflat", token)
    assert "wrong number of arguments" in await refused(conn, "EMQ.COMPLETE")
    assert "numkeys" in await refused(conn, "EMQ.COMPLETE", "two", *line[2:])
    four = [keyspace.queue_key(Q, s) for s in ("active", "pending", "schedule", "dead")]
    assert "numkeys 2" in await refused(conn, "EMQ.COMPLETE", 4, *four, *line[4:])
    assert "wrong number of arguments" in await refused(conn, *line[:-1])
    assert "wrong number of arguments" in await refused(conn, *line, "extra")
    other_base = [*line[:-1], keyspace.base("elsewhere")]
    assert "hashtag" in await refused(conn, *other_base)


# ---- EMQ.FAIL --------------------------------------------------------------

async def test_fail_refuses_the_same_queue_and_cross_queue_layouts_as_layouts(conn) -> None:
    child, token = await claimed_child(conn)
    flat = flat_fail(Q, child, token)
    keys, args = flat[2:6], flat[6:]
    same_queue = [*keys, keyspace.job_key(Q, "JOBp"), keyspace.dependencies_key(Q, "JOBp"),
                  keyspace.ignored_key(Q, "JOBp"), keyspace.queue_key(Q, "pending")]
    assert await refused(conn, "EMQ.FAIL", 8, *same_queue, *args, "JOBp", "fp") == "EMQSTATE fail flow not native"
    cross = [*keys, keyspace.outbox_key(Q)]
    assert (
        await refused(conn, "EMQ.FAIL", 5, *cross, *args, "JOBp", "fp", "elsewhere")
        == "EMQSTATE fail flow not native"
    )
    assert await refused(conn, "EMQ.FAIL", 8) == "EMQSTATE fail flow not native"


async def test_the_flat_fail_form_on_a_flow_child_refuses_after_the_token_check(conn) -> None:
    child, token = await claimed_child(conn)
    assert await answered(conn, *flat_fail(Q, "JOBnowhere", 1)) == 0
    assert await refused(conn, *flat_fail(Q, child, token + 1)) == "EMQSTALE fail token mismatch"
    assert await refused(conn, *flat_fail(Q, child, token)) == "EMQSTATE fail flow not native"


async def test_a_flat_job_failed_natively_below_the_cap_is_scheduled_like_fail_lua(conn) -> None:
    native_token = await claimed_flat(conn, Q)
    script_token = await claimed_flat(conn, TWIN)
    assert await conn.execute_command(*flat_fail(Q, "JOBflat", native_token)) == "scheduled"
    assert await jobs.fail(conn, TWIN, "JOBflat", script_token, "boom", 3, backoff_ms=1000) == "scheduled"
    assert await row(conn, Q, "JOBflat") == await row(conn, TWIN, "JOBflat") == {
        "state": "scheduled", "attempts": "1", "payload": "x", "last_error": "boom"}
    await same_sets_and_scores(conn, "schedule")


async def test_a_flat_job_failed_natively_at_the_cap_is_dead_like_fail_lua(conn) -> None:
    native_token = await claimed_flat(conn, Q, attempts=2)
    script_token = await claimed_flat(conn, TWIN, attempts=2)
    assert await conn.execute_command(*flat_fail(Q, "JOBflat", native_token, "gave up")) == "dead"
    assert await jobs.fail(conn, TWIN, "JOBflat", script_token, "gave up", 3) == "dead"
    assert await row(conn, Q, "JOBflat") == await row(conn, TWIN, "JOBflat") == {
        "state": "dead", "attempts": "3", "payload": "x", "last_error": "gave up"}
    await same_sets_and_scores(conn, "dead")


async def same_sets_and_scores(conn: Any, timed: str) -> None:
    """Both queues hold the same keys, the same members in every set, and
    scores equal up to the moments TIME was read (the `timed` set)."""
    found = await keyspace_bytes(conn)
    assert renamed(found, Q).keys() == renamed(found, TWIN).keys()
    for name in ("pending", "active", "schedule", "dead"):
        mine = await conn.zrange(keyspace.queue_key(Q, name), 0, -1, withscores=True)
        twin = await conn.zrange(keyspace.queue_key(TWIN, name), 0, -1, withscores=True)
        assert [m for m, _ in mine] == [m for m, _ in twin]
        if name == timed:
            now = (await conn.time())[0] * 1000
            assert all(abs(a - b) < 5000 and a > now - 5000 for (_, a), (_, b) in zip(mine, twin))
        elif name != "active":
            assert mine == twin


async def test_fail_refuses_bad_numbers_and_other_shapes_before_any_write(conn) -> None:
    token = await claimed_flat(conn, Q)
    line = flat_fail(Q, "JOBflat", token)
    assert "whole numbers" in await refused(conn, *line[:9], "three", *line[10:])
    assert "numkeys 4" in await refused(conn, "EMQ.FAIL", 2, *line[2:])
    assert "wrong number of arguments" in await refused(conn, *line[:-1])


async def test_a_key_of_the_wrong_type_is_refused_before_the_first_write(conn) -> None:
    token = await claimed_flat(conn, Q)
    await conn.set(keyspace.metrics_key(Q), "not a hash")
    assert "WRONGTYPE" in await refused(conn, *flat_complete(Q, "JOBflat", token))
    await conn.set(keyspace.queue_key(Q, "dead"), "not a set")
    assert "WRONGTYPE" in await refused(conn, *flat_fail(Q, "JOBflat", token))
    # the job is still claimed, exactly as before both calls
    assert (await row(conn, Q, "JOBflat"))["state"] == "active"
