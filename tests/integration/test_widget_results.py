"""The results reader widget against a real Valkey: the fan-in writes, the reads only look."""

from __future__ import annotations

from typing import Any

import pytest

from server.emq import keyspace
from server.widgets.base import Context
from server.widgets.results_reader import CHILDREN, ERROR, PARENT, VALUES, ResultsReader

from .conftest import act, all_keys, members, row, where

SANDBOX = "s0123456789"
QUEUE = f"{SANDBOX}.results"


@pytest.fixture
async def reader(conn) -> tuple[ResultsReader, Context]:
    widget, ctx = ResultsReader(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def emq_state(conn) -> dict[str, Any]:
    return {k: await conn.dump(k) for k in sorted(await all_keys(conn)) if k.startswith("emq:")}


async def test_the_scenario_lands_a_held_parent_on_three_children_with_the_ignore_policy(reader, conn) -> None:
    assert (await row(conn, QUEUE, PARENT))["state"] == "awaiting_children"
    assert await conn.get(keyspace.dependencies_key(QUEUE, PARENT)) == "3"
    for child in CHILDREN:
        assert (await row(conn, QUEUE, child))["parent_policy"] == "id"
    assert sorted(await members(conn, QUEUE, "pending")) == sorted(CHILDREN)


async def test_completing_a_child_records_its_value_in_processed(reader, conn) -> None:
    widget, ctx = reader
    outcome = await act(widget, ctx, "complete-child", {})
    child = outcome.detail["child"]
    assert await conn.hgetall(keyspace.processed_key(QUEUE, PARENT)) == {child: VALUES[child]}
    assert await conn.get(keyspace.dependencies_key(QUEUE, PARENT)) == "2"


async def test_failing_a_child_at_the_cap_records_it_in_ignored_and_the_parent_still_proceeds(reader, conn) -> None:
    widget, ctx = reader
    failed = await act(widget, ctx, "fail-child", {})
    assert failed.detail["outcome"] == "dead"
    assert await conn.hgetall(keyspace.ignored_key(QUEUE, PARENT)) == {failed.detail["child"]: ERROR}
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "complete-child", {})
    assert (await row(conn, QUEUE, PARENT))["state"] == "pending"
    assert await where(conn, QUEUE, PARENT) == ["pending"]
    assert (await act(widget, ctx, "complete-child", {})).kind == "info"


async def test_the_three_reads_return_what_the_fan_in_wrote(reader) -> None:
    widget, ctx = reader
    done = (await act(widget, ctx, "complete-child", {})).detail["child"]
    dead = (await act(widget, ctx, "fail-child", {})).detail["child"]
    outcome = await act(widget, ctx, "read", {})
    assert outcome.detail["values"] == {done: VALUES[done]}
    assert outcome.detail["dependencies"] == 1
    assert outcome.detail["ignored"] == {dead: ERROR}
    shown = (await widget.snapshot(ctx))["picture"]["read"]
    assert shown["values"] == {done: VALUES[done]} and shown["current"] is True


async def test_the_three_reads_write_nothing(reader, conn) -> None:
    widget, ctx = reader
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "fail-child", {})
    before = await emq_state(conn)
    outcome = await act(widget, ctx, "read", {})
    assert await emq_state(conn) == before
    assert outcome.detail["unchanged"] is True
    assert f"the three reads wrote nothing: {len(before)} keys unchanged" in outcome.text


async def test_a_read_says_when_valkey_has_moved_on_since(reader) -> None:
    widget, ctx = reader
    await act(widget, ctx, "read", {})
    await act(widget, ctx, "complete-child", {})
    shown = (await widget.snapshot(ctx))["picture"]["read"]
    assert shown["dependencies"] == 3 and shown["current"] is False


async def test_reset_lands_the_flow_again_and_forgets_the_last_read(reader, conn) -> None:
    widget, ctx = reader
    await act(widget, ctx, "complete-child", {})
    await act(widget, ctx, "read", {})
    await act(widget, ctx, "reset", {})
    assert await conn.get(keyspace.dependencies_key(QUEUE, PARENT)) == "3"
    assert (await widget.snapshot(ctx))["picture"]["read"] is None
