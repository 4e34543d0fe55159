"""The bulk ledger widget against a real Valkey: its actions and its picture."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from server.emq import keyspace
from server.widgets.base import BadInput, Context
from server.widgets.ledger import Ledger

from .conftest import act, all_keys, members, row, where

SANDBOX = "s0123456789"
ORDERS, MAIL, BILLING = (f"{SANDBOX}.ledger.{q}" for q in ("orders", "mail", "billing"))


@pytest.fixture
async def ledger(conn) -> tuple[Ledger, Context]:
    widget, ctx = Ledger(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def emq_state(conn) -> dict[str, Any]:
    """Every emq key and its DUMP: equal before and after means nothing was written."""
    return {k: await conn.dump(k) for k in sorted(await all_keys(conn)) if k.startswith("emq:")}


async def picture(widget: Ledger, ctx: Context) -> dict[str, Any]:
    return (await widget.snapshot(ctx))["picture"]


async def test_the_ledger_starts_with_nothing_landed(ledger) -> None:
    widget, ctx = ledger
    snap = await widget.snapshot(ctx)
    assert [k for q in snap["queues"] for k in q["keys"]] == []
    assert snap["picture"]["result"] == [] and snap["picture"]["move"] == 0
    assert snap["readout"].startswith("Before flow 1")


async def test_running_the_batch_leaves_each_flow_in_its_documented_state(ledger, conn) -> None:
    widget, ctx = ledger
    outcome = await act(widget, ctx, "run-batch", {})
    assert outcome.detail["result"] == [
        ("JOB0KHTOWnGLuA", ["JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC"]),
        ("JOB0KHTOWnGLuD", ["JOB0KHTOWnGLuE", "JOB0KHTOWnGLuF"]),
    ]
    # flow 1: held on two children, both pending in orders
    assert (await row(conn, ORDERS, "JOB0KHTOWnGLuA"))["state"] == "awaiting_children"
    assert {"JOB0KHTOWnGLuB", "JOB0KHTOWnGLuC"} <= set(await members(conn, ORDERS, "pending"))
    # flow 2: held, its mail child pending in mail
    assert await members(conn, MAIL, "pending") == ["JOB0KHTOWnGLuE"]
    # flow 3: refused by the kind law, wrote nothing at all
    assert not [k for k in await all_keys(conn) if any(i in k for i in ("GLuG", "GLuH", "GLuI"))]
    # flow 4: parent held in no set, first child claimable in billing, second absent
    assert (await row(conn, ORDERS, "JOB0KHTOWnGLuJ"))["state"] == "awaiting_children"
    assert await conn.get(keyspace.dependencies_key(ORDERS, "JOB0KHTOWnGLuJ")) == "2"
    assert await where(conn, ORDERS, "JOB0KHTOWnGLuJ") == []
    assert await members(conn, BILLING, "pending") == ["JOB0KHTOWnGLuL"]
    assert not await conn.exists(keyspace.job_key(BILLING, "TASK0KHTOWnGLuK"))
    flows = (await picture(widget, ctx))["flows"]
    assert [f["entry"] is not None for f in flows] == [True, True, False, False]
    assert "the refused flow wrote nothing" in flows[2]["line"]
    assert flows[3]["state"] == "awaiting_children" and flows[3]["sets"] == []
    assert [c["state"] for c in flows[3]["children"]] == ["pending", None]


async def test_next_flow_fills_the_result_in_input_order_one_add_at_a_time(ledger) -> None:
    widget, ctx = ledger
    seen = []
    for n in range(1, 5):
        outcome = await act(widget, ctx, "next", {})
        assert outcome.text.startswith(f"Flow {n}")
        seen.append([p for p, _ in (await picture(widget, ctx))["result"]])
    assert seen == [
        ["JOB0KHTOWnGLuA"],
        ["JOB0KHTOWnGLuA", "JOB0KHTOWnGLuD"],
        ["JOB0KHTOWnGLuA", "JOB0KHTOWnGLuD"],
        ["JOB0KHTOWnGLuA", "JOB0KHTOWnGLuD"],
    ]
    flows = (await picture(widget, ctx))["flows"]
    assert "EMQKIND" in flows[2]["error"] and "EMQKIND" in flows[3]["error"]
    assert (await act(widget, ctx, "next", {})).kind == "info"


async def test_previous_flow_replays_the_flows_before_it_on_valkey(ledger, conn) -> None:
    widget, ctx = ledger
    for _ in range(4):
        await act(widget, ctx, "next", {})
    await act(widget, ctx, "previous", {})
    pic = await picture(widget, ctx)
    assert pic["move"] == 3 and pic["flows"][3]["state"] is None
    assert not await conn.exists(keyspace.job_key(ORDERS, "JOB0KHTOWnGLuJ"))
    await act(widget, ctx, "goto", {"step": 0})
    assert not [k for k in await all_keys(conn) if k.startswith("emq:")]


async def test_picking_a_flow_reports_its_entry_and_its_parent_as_valkey_holds_it(ledger) -> None:
    widget, ctx = ledger
    await act(widget, ctx, "run-batch", {})
    first = await act(widget, ctx, "pick", {"flow": 1})
    assert "in the result: (JOB0KHTOWnGLuA, [JOB0KHTOWnGLuB, JOB0KHTOWnGLuC])" in first.text
    assert ":dependencies = 2" in first.text
    fourth = await act(widget, ctx, "pick", {"flow": 4})
    assert "not in the result" in fourth.text and "awaiting_children" in fourth.text
    assert "TASK0KHTOWnGLuK: no row" in fourth.text
    assert (await picture(widget, ctx))["picked"] == 4
    with pytest.raises(BadInput):
        await act(widget, ctx, "pick", {"flow": 5})


async def test_an_ill_formed_id_lands_nothing_and_leaves_every_key_unchanged(ledger, conn) -> None:
    widget, ctx = ledger
    await act(widget, ctx, "next", {})
    before = await emq_state(conn)
    outcome = await act(widget, ctx, "ill-formed", {})
    assert await emq_state(conn) == before
    assert outcome.detail["unchanged"] and "BadId" in outcome.text
    assert not await conn.exists(keyspace.job_key(ORDERS, "JOB0KHTOWnGLuM"))


async def test_retrying_flow_four_then_completing_its_children_releases_the_parent_once(ledger, conn) -> None:
    widget, ctx = ledger
    await act(widget, ctx, "run-batch", {})
    retried = await act(widget, ctx, "retry-4", {})
    assert retried.detail["retry"] == ("JOB0KHTOWnGLuJ", ["JOB0KHTOWnGLuL", "JOB0KHTOWnGLuK"])
    assert await conn.get(keyspace.dependencies_key(ORDERS, "JOB0KHTOWnGLuJ")) == "2"
    assert await members(conn, BILLING, "pending") == ["JOB0KHTOWnGLuK", "JOB0KHTOWnGLuL"]
    done = await act(widget, ctx, "complete-4", {})
    assert done.detail["delivered"] == 2 and done.detail["second_tick"] == 0
    assert (await row(conn, ORDERS, "JOB0KHTOWnGLuJ"))["state"] == "pending"
    assert await where(conn, ORDERS, "JOB0KHTOWnGLuJ") == ["pending"]
    processed = await conn.hgetall(keyspace.processed_key(ORDERS, "JOB0KHTOWnGLuJ"))
    assert sorted(processed) == ["JOB0KHTOWnGLuK", "JOB0KHTOWnGLuL"]
    # a second retry and a second run change nothing: released exactly once
    await act(widget, ctx, "retry-4", {})
    assert (await act(widget, ctx, "complete-4", {})).kind == "info"
    assert await where(conn, ORDERS, "JOB0KHTOWnGLuJ") == ["pending"]
    assert "pending" in (await act(widget, ctx, "pick", {"flow": 4})).text


async def test_completing_flow_fours_first_child_before_the_retry_still_ends_in_one_release(ledger, conn) -> None:
    widget, ctx = ledger
    await act(widget, ctx, "run-batch", {})
    await act(widget, ctx, "complete-4", {})
    assert await conn.get(keyspace.dependencies_key(ORDERS, "JOB0KHTOWnGLuJ")) == "1"
    await act(widget, ctx, "retry-4", {})
    assert await members(conn, BILLING, "pending") == ["JOB0KHTOWnGLuK"]
    await act(widget, ctx, "complete-4", {})
    assert (await row(conn, ORDERS, "JOB0KHTOWnGLuJ"))["state"] == "pending"


async def test_retry_before_flow_four_was_tried_is_refused_politely(ledger, conn) -> None:
    widget, ctx = ledger
    outcome = await act(widget, ctx, "retry-4", {})
    assert outcome.kind == "info"
    assert not [k for k in await all_keys(conn) if k.startswith("emq:")]


async def test_reset_lands_the_empty_ledger_again(ledger, conn) -> None:
    widget, ctx = ledger
    await act(widget, ctx, "run-batch", {})
    await act(widget, ctx, "reset", {})
    assert not [k for k in await all_keys(conn) if k.startswith("emq:")]
    assert (await picture(widget, ctx))["result"] == []


def one_flow(parent: str = "JOBx1", **child: Any) -> dict[str, Any]:
    return {"parent": {"id": parent, "payload": "p"}, "children": [{"id": "JOBx2", "payload": "c", **child}]}


async def test_a_custom_batch_lands_in_the_ledgers_own_queues(ledger, conn) -> None:
    widget, ctx = ledger
    body = {"flows": [one_flow(queue="mail"), one_flow("JOBy1", id="child-b")]}
    outcome = await act(widget, ctx, "custom-batch", body)
    assert outcome.detail["result"] == [("JOBx1", ["JOBx2"])]
    assert await members(conn, MAIL, "pending") == ["JOBx2"]
    pic = await picture(widget, ctx)
    assert pic["mode"] == "custom" and pic["flows"][0]["state"] == "awaiting_children"
    assert "wrote nothing" in pic["flows"][1]["line"]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "list 'flows'"),
        ({"flows": "JOBx1"}, "list 'flows'"),
        ({"flows": []}, "1 to"),
        ({"flows": [{"children": [{"id": "JOBx2", "payload": "c"}]}]}, "'parent'"),
        ({"flows": [one_flow()] * 17}, "1 to 16 flows"),
        ({"flows": [{"parent": {"id": "JOBx1", "payload": "p"},
                     "children": [{"id": f"JOBc{i}", "payload": "c"} for i in range(17)]}]}, "1 to 16 children"),
        ({"flows": [one_flow(payload="x" * 1025)]}, "1025 bytes"),
        ({"flows": [one_flow(id="JOB bad}")]}, "ill-formed job id"),
        ({"flows": [one_flow("JOB bad}")]}, "ill-formed job id"),
        ({"flows": [one_flow(queue="../s9999999999.ledger.orders")]}, "'queue' must be one of"),
        ({"flows": [one_flow(queue=f"{SANDBOX}.fanin")]}, "'queue' must be one of"),
        ({"flows": [one_flow(children=[{"id": "JOBz", "payload": "z"}])]}, "unknown fields"),
        ({"flows": [one_flow(), one_flow()]}, "already appears"),
    ],
)
async def test_a_bad_custom_batch_is_refused_before_anything_is_written(ledger, conn, body, says) -> None:
    widget, ctx = ledger
    await act(widget, ctx, "next", {})
    before = await emq_state(conn)
    with pytest.raises(BadInput, match=says):
        await act(widget, ctx, "custom-batch", body)
    assert await emq_state(conn) == before


async def test_the_limits_of_a_custom_batch_come_from_the_settings(conn) -> None:
    widget, ctx = Ledger(), Context(conn, SANDBOX)
    widget.limits = dataclasses.replace(widget.limits, max_flows=1)
    await widget.show(ctx)
    with pytest.raises(BadInput, match="1 to 1 flows"):
        await act(widget, ctx, "custom-batch", {"flows": [one_flow(), one_flow("JOBy1", id="JOBy2")]})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"flows": [one_flow(), one_flow("JOBy1", id="JOBy2 bad}")]}, "flows[1].children[0].id"),
        ({"flows": [one_flow("JOB y1")]}, "flows[0].parent.id"),
        ({"flows": [one_flow(queue="payments")]}, "flows[0].children[0]"),
    ],
)
async def test_a_bad_field_of_your_own_batch_is_named_in_the_refusal(ledger, conn, body, field) -> None:
    widget, ctx = ledger
    before = await emq_state(conn)
    with pytest.raises(BadInput) as refused:
        await act(widget, ctx, "custom-batch", body)
    assert str(refused.value).startswith(field)
    assert await emq_state(conn) == before


async def test_your_own_batch_lists_the_landed_flows_in_input_order_and_what_a_failed_one_left(ledger, conn) -> None:
    widget, ctx = ledger
    body = {"flows": [
        {"parent": {"id": "JOBmine1", "payload": "p"}, "children": [{"id": "JOBmine2", "queue": "mail"}]},
        {"parent": {"id": "JOBmine4", "payload": "p"},
         "children": [{"id": "JOBmine5", "queue": "billing"}, {"id": "TASKmine6", "queue": "billing"}]},
        {"parent": {"id": "JOBmine7", "payload": "p"}, "children": [{"id": "JOBmine8"}]},
    ]}
    outcome = await act(widget, ctx, "custom-batch", body)
    assert outcome.detail["result"] == [("JOBmine1", ["JOBmine2"]), ("JOBmine7", ["JOBmine8"])]
    assert (await row(conn, ORDERS, "JOBmine4"))["state"] == "awaiting_children"
    assert await members(conn, BILLING, "pending") == ["JOBmine5"]
    flows = (await picture(widget, ctx))["flows"]
    assert [f["entry"] is not None for f in flows] == [True, False, True]
    assert "not in the result" in flows[1]["line"] and "awaiting_children" in flows[1]["line"]
