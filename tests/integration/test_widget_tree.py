"""The tree widget against a real Valkey: the host walk node by node, the inner
node held as a parent and counted as a child, release level by level."""

from __future__ import annotations

import pytest

from server.emq import flows, results
from server.widgets.base import BadInput, Context
from server.widgets.tree import INNER, LEAVES, ROOT, TWIG, Tree, tree_spec

from .conftest import act, all_keys, members, row

SANDBOX = "s0123456789"
Q = f"{SANDBOX}.tree"


@pytest.fixture
async def tree(conn) -> tuple[Tree, Context]:
    widget, ctx = Tree(), Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def emq_dump(conn) -> dict[str, bytes]:
    return {k: await conn.dump(k) for k in sorted(await all_keys(conn)) if k.startswith("emq:")}


async def test_the_tree_starts_before_its_walk_with_no_key(tree, conn) -> None:
    widget, ctx = tree
    assert await emq_dump(conn) == {}
    assert (await widget.snapshot(ctx))["readout"].startswith("Before the walk")


async def test_the_walk_lands_parent_first_one_node_at_a_time(tree, conn) -> None:
    widget, ctx = tree
    first = await act(widget, ctx, "next", {})
    assert first.detail["node"] == ROOT and (await row(conn, Q, ROOT))["state"] == "awaiting_children"
    assert await results.dependencies(conn, Q, ROOT) == 2
    second = await act(widget, ctx, "next", {})
    assert second.detail["node"] == INNER
    inner = await row(conn, Q, INNER)
    assert inner["state"] == "awaiting_children" and inner["parent"] == ROOT and inner["parent_policy"] == "fp"
    assert await results.dependencies(conn, Q, INNER) == 2
    assert await members(conn, Q, "pending") == []  # both parents held, in no state set
    assert "held as a parent" in second.text and "landed as a child of JOBtree" in second.text
    for leaf in (*LEAVES, TWIG):
        assert (await act(widget, ctx, "next", {})).detail["node"] == leaf
    assert await members(conn, Q, "pending") == [*LEAVES, TWIG]
    assert (await row(conn, Q, LEAVES[0]))["parent"] == INNER
    assert (await row(conn, Q, TWIG))["parent"] == ROOT
    assert (await act(widget, ctx, "next", {})).kind == "info"


async def test_stepping_the_walk_leaves_exactly_what_flows_add_leaves(tree, conn) -> None:
    widget, ctx = tree
    await act(widget, ctx, "goto", {"step": 5})
    stepped = await emq_dump(conn)
    await act(widget, ctx, "walk", {})
    assert await emq_dump(conn) == stepped
    await widget.clear(ctx)
    await flows.add(conn, Q, tree_spec())
    assert await emq_dump(conn) == stepped


async def test_previous_node_replays_the_walk_one_node_shorter(tree, conn) -> None:
    widget, ctx = tree
    await act(widget, ctx, "goto", {"step": 3})
    await act(widget, ctx, "previous", {})
    assert await members(conn, Q, "pending") == []
    assert (await row(conn, Q, INNER))["state"] == "awaiting_children"
    assert not await conn.exists(f"emq:{{{Q}}}:job:{LEAVES[0]}")


async def test_the_tree_releases_level_by_level(tree, conn) -> None:
    widget, ctx = tree
    await act(widget, ctx, "walk", {})
    low = await act(widget, ctx, "complete-level", {})
    assert low.detail == {"level": 2, "completed": list(LEAVES)}
    assert (await row(conn, Q, INNER))["state"] == "pending"
    assert await members(conn, Q, "pending") == [INNER, TWIG]
    assert await results.dependencies(conn, Q, ROOT) == 2  # the leaves do not count towards the root
    assert (await row(conn, Q, ROOT))["state"] == "awaiting_children"
    up = await act(widget, ctx, "complete-level", {})
    assert up.detail == {"level": 1, "completed": [INNER, TWIG]}
    assert await results.dependencies(conn, Q, ROOT) == 0
    assert await members(conn, Q, "pending") == [ROOT]
    assert await results.children_values(conn, Q, ROOT) == {INNER: f"{INNER} done", TWIG: f"{TWIG} done"}
    # the released root is never claimed as a level of children
    assert (await act(widget, ctx, "complete-level", {})).kind == "info"
    assert await members(conn, Q, "pending") == [ROOT]


async def test_goto_past_the_walk_replays_the_completions(tree, conn) -> None:
    widget, ctx = tree
    outcome = await act(widget, ctx, "goto", {"step": 6})
    assert outcome.text.startswith("Step 6 of 7")
    assert (await row(conn, Q, INNER))["state"] == "pending"
    past = await act(widget, ctx, "goto", {"step": 8})
    assert past.text.startswith("This tour has 7 steps, so the link to step 8 opened the last one.")
    with pytest.raises(BadInput):
        await act(widget, ctx, "goto", {"step": -1})
