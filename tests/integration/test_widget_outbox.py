"""The outbox widget driven directly against a real Valkey: every assertion
reads the keys the widget's actions left behind."""

from __future__ import annotations

import pytest

from server.emq import keyspace, pump, results
from server.widgets.base import BadInput, Context
from server.widgets.outbox import MAX_BLOCKED, PARENT, POISON, Outbox

from .conftest import act, members, row

SANDBOX = "s0123456789"


@pytest.fixture
async def landed(conn):
    widget, ctx = Outbox(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


def q(part: str) -> str:
    return f"{SANDBOX}.outbox.{part}"


async def deps(conn) -> int:
    return await results.dependencies(conn, q("orders"), PARENT)


async def test_landing_holds_the_parent_on_its_slot_and_the_children_on_two_others(landed, conn) -> None:
    widget, ctx = landed
    assert (await row(conn, q("orders"), PARENT))["state"] == "awaiting_children"
    assert await deps(conn) == 3
    assert await members(conn, q("mail"), "pending") == ["JOBmail1", "JOBmail2"]
    assert (await row(conn, q("billing"), "JOBbilling1"))["parent_queue"] == q("orders")
    snap = await widget.snapshot(ctx)
    slots = {v["queue"]: v["slot"] for v in snap["queues"]}
    assert len(set(slots.values())) == 3
    assert [x["slot"] for x in snap["picture"]["queues"]] == [slots[q("mail")], slots[q("billing")]]
    assert "0 of 3 completions delivered" in snap["readout"] and ":dependencies = 3" in snap["readout"]


async def test_a_completion_waits_in_its_own_queues_outbox_and_the_counter_stays(landed, conn) -> None:
    widget, ctx = landed
    outcome = await act(widget, ctx, "complete-child", {})
    assert outcome.detail["child"] == "JOBmail1"
    entries = [pump.decode_entry(e) for e in await pump.read_all(conn, q("mail"))]
    assert [(e.kind, e.child, e.parent, e.parent_queue) for e in entries] == [
        ("completed", "JOBmail1", PARENT, q("orders"))
    ]
    assert await deps(conn) == 3
    picture = (await widget.snapshot(ctx))["picture"]
    assert picture["queues"][0]["outbox"][0]["text"] == "completed JOBmail1 → JOBparent, waiting for the Pump"


async def test_pump_ticks_count_down_and_release_the_parent_at_zero(landed, conn) -> None:
    widget, ctx = landed
    for expected in (2, 1, 0):
        await act(widget, ctx, "complete-child", {})
        outcome = await act(widget, ctx, "pump-tick", {})
        assert await deps(conn) == expected
        assert f"to {expected}" in outcome.text
    assert await members(conn, q("orders"), "pending") == [PARENT]
    assert (await row(conn, q("orders"), PARENT))["state"] == "pending"
    assert "released into pending" in outcome.text
    assert await conn.llen(keyspace.outbox_key(q("mail"))) == 0


async def test_crash_before_trim_then_a_tick_delivers_twice_but_decrements_once(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "complete-child", {})
    crash = await act(widget, ctx, "crash-before-trim", {})
    assert crash.detail["queues"]["mail"] == {
        "read": 1, "delivered": 1, "duplicates": 0, "blocked": False, "trimmed": 0
    }
    assert await conn.llen(keyspace.outbox_key(q("mail"))) == 1  # still there
    assert await deps(conn) == 2
    tick = await act(widget, ctx, "pump-tick", {})
    assert tick.detail["queues"]["mail"]["duplicates"] == 1
    assert "1 entry delivered again: the guard refused it (duplicate)" in tick.text
    assert ":dependencies stayed at 2" in tick.text
    assert await deps(conn) == 2  # decremented once overall
    assert await results.children_values(conn, q("orders"), PARENT) == {"JOBmail1": "mail done"}
    assert await conn.llen(keyspace.outbox_key(q("mail"))) == 0


async def test_a_poison_entry_blocks_the_head_until_the_aged_tick_moves_it_aside(landed, conn) -> None:
    widget, ctx = landed
    poison = await act(widget, ctx, "add-poison", {})
    assert "teaching action" in poison.text
    await act(widget, ctx, "complete-child", {})  # JOBmail1's entry lands behind it
    waiting = await pump.read_all(conn, q("mail"))
    assert waiting[0] == POISON and pump.decode_entry(waiting[1]).child == "JOBmail1"
    tick = await act(widget, ctx, "pump-tick", {})
    assert "the head is blocked" in tick.text and tick.detail["queues"]["mail"]["delivered"] == 0
    assert await deps(conn) == 3
    for n in range(1, MAX_BLOCKED + 1):
        aged = await act(widget, ctx, "aged-pump-tick", {})
        assert aged.detail["queues"]["mail"] == {"delivered": 0, "moved": 0, "head_count": n}
        assert await conn.lrange(keyspace.poison_key(q("mail")), 0, -1) == []
    aged = await act(widget, ctx, "aged-pump-tick", {})
    assert aged.detail["queues"]["mail"] == {"delivered": 1, "moved": 1, "head_count": 0}
    assert "moved to flow:outbox:poison" in aged.text
    assert await conn.lrange(keyspace.poison_key(q("mail")), 0, -1) == [POISON]
    assert await conn.llen(keyspace.outbox_key(q("mail"))) == 0
    assert await deps(conn) == 2
    picture = (await widget.snapshot(ctx))["picture"]
    assert picture["queues"][0]["poison"][0]["poison"] is True


async def test_the_tour_deep_link_replays_to_a_released_parent(landed, conn) -> None:
    widget, ctx = landed
    outcome = await act(widget, ctx, "goto", {"step": 11})
    assert outcome.text.startswith("Step 11 of 11")
    assert await deps(conn) == 0
    assert await members(conn, q("orders"), "pending") == [PARENT]
    assert await conn.lrange(keyspace.poison_key(q("mail")), 0, -1) == [POISON]
    await act(widget, ctx, "goto", {"step": 0})
    assert await deps(conn) == 3


@pytest.mark.parametrize("body", [{}, {"step": -1}, {"step": 1.5}, {"step": "3"}, {"step": True}])
async def test_a_bad_step_is_refused_and_nothing_is_written(landed, conn, body) -> None:
    widget, ctx = landed
    await act(widget, ctx, "complete-child", {})
    before = await conn.llen(keyspace.outbox_key(q("mail")))
    with pytest.raises(BadInput):
        await act(widget, ctx, "goto", body)
    assert await conn.llen(keyspace.outbox_key(q("mail"))) == before == 1


async def test_reset_lands_the_flow_again_and_empties_every_outbox(landed, conn) -> None:
    widget, ctx = landed
    await act(widget, ctx, "add-poison", {})
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "reset", {})
    assert await deps(conn) == 3
    assert await conn.llen(keyspace.outbox_key(q("mail"))) == 0
    assert await members(conn, q("mail"), "pending") == ["JOBmail1", "JOBmail2"]


async def test_one_script_needs_a_cluster_and_says_so_on_one_server(landed) -> None:
    from server.widgets.base import Refusal

    widget, ctx = landed
    before = await widget.snapshot(ctx)
    assert before["picture"]["cluster"] is False
    assert all("node" not in view for view in before["queues"])
    with pytest.raises(Refusal, match=r"needs a cluster: .*emqlab serve --cluster"):
        await act(widget, ctx, "one-script", {})
    assert (await widget.snapshot(ctx))["queues"] == before["queues"]


async def test_one_script_on_a_cluster_shows_the_servers_crossslot_and_writes_nothing(cluster_conn) -> None:
    widget, ctx = Outbox(), Context(cluster_conn, SANDBOX)
    await widget.show(ctx)
    before = await widget.snapshot(ctx)
    assert before["picture"]["cluster"] is True
    nodes = {view["queue"]: view["node"] for view in before["queues"]}
    assert all(node.startswith("127.0.0.1:") for node in nodes.values())
    for view in before["queues"]:
        assert view["node"] == cluster_conn.get_node_from_key(keyspace.queue_key(view["queue"], "")).name
    outcome = await act(widget, ctx, "one-script", {})
    assert outcome.kind == "refused"
    assert outcome.detail["error"] == "CROSSSLOT Keys in request don't hash to the same slot"
    assert "The cluster refused it: CROSSSLOT Keys in request don't hash to the same slot" in outcome.text
    assert outcome.detail["written"] == 0 and "Nothing was written" in outcome.text
    assert outcome.detail["node"] == nodes[q("orders")]
    assert (await widget.snapshot(ctx))["queues"] == before["queues"]
    # the rest of the widget works on the cluster as on one server
    await act(widget, ctx, "complete-child", {})
    assert (await act(widget, ctx, "pump-tick", {})).detail["queues"]["mail"]["delivered"] == 1
    assert await results.dependencies(cluster_conn, q("orders"), PARENT) == 2
    await act(widget, ctx, "reset", {})
    assert await results.dependencies(cluster_conn, q("orders"), PARENT) == 3
