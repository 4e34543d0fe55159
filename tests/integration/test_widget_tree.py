"""The tree widget on a real Valkey, driven as clicks drive it: the walk lands
parent first, completions release level by level, and every sentence is
checked against the keys."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from server.emq import keyspace, results
from server.widgets import questions
from server.widgets.reader import read
from server.widgets.tree import INNER, LEAVES, ORDER, PARENT_OF, ROOT, TWIG, Tree
from tests import widgets
from tests.integration.keystates import reachable, replay, states

SANDBOX = widgets.SANDBOX
W = "tree"
Q = f"{SANDBOX}.tree"


async def row(conn: Any, job: str, queue: str = Q) -> dict[str, str]:
    return dict(await conn.hgetall(keyspace.job_key(queue, job)))


async def pending(conn: Any, queue: str = Q) -> list[str]:
    return list(await conn.zrange(keyspace.queue_key(queue, "pending"), 0, -1))


async def readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The snapshot's readout, each node's line checked against the raw keys."""
    readout = (await widgets.snapshot_of(conn, W, sandbox)).readout
    queue = f"{sandbox}.tree"
    landed = []
    for node in ORDER:
        found = await row(conn, node, queue)
        up = PARENT_OF.get(node)
        counted = up is not None and await conn.hexists(keyspace.processed_key(queue, up), node)
        if found:
            sets = [s for s in keyspace.STATE_SETS if await conn.zscore(keyspace.queue_key(queue, s), node) is not None]
            line = f"{node}: {found['state']}, in {', '.join(sets) or 'no state set'}"
            deps = await conn.get(keyspace.dependencies_key(queue, node))
            line += f", :dependencies = {deps}" if deps is not None else ""
            assert line in readout, (line, readout)
        elif counted:
            assert f"{node}: completed, counted in {up}'s :processed" in readout, readout
        else:
            assert f"{node}:" not in readout, readout
        landed += [node] if found or counted else []
    if not landed:
        assert readout.startswith("Before the walk: no node has landed yet")
    else:
        assert readout.startswith(f"{len(landed)} of {len(ORDER)} nodes landed")
    return readout


@pytest.fixture
async def landed(conn: Any) -> Any:
    await widgets.show(conn, W)
    return conn


async def test_before_the_walk_nothing_has_landed(landed: Any) -> None:
    conn = landed
    assert await states(conn, SANDBOX) == {}
    assert await readout_is_true(conn) == "Before the walk: no node has landed yet; Next node lands the root first."
    early = await widgets.act(conn, W, "complete-level")
    assert early.outcome["text"].startswith("Nothing has landed yet: walk the tree first")


async def test_the_walk_holds_the_root_first_and_the_inner_node_is_both_child_and_held_parent(landed: Any) -> None:
    conn = landed
    first = await widgets.act(conn, W, "next")
    assert first.outcome["text"] == ("Node 1 of 5, JOBtree: held as a parent (state awaiting_children, "
                                     ":dependencies = 2, in no state set).")
    second = await widgets.act(conn, W, "next")
    assert second.outcome["reached"] == ["inner"]
    assert "and landed as a child of JOBtree" in second.outcome["text"]
    branch = await row(conn, INNER)
    assert branch["state"] == "awaiting_children" and branch["parent"] == ROOT
    assert await conn.get(keyspace.dependencies_key(Q, INNER)) == "2"
    assert await conn.get(keyspace.dependencies_key(Q, ROOT)) == "2"  # counted before any leaf exists
    assert await pending(conn) == []
    assert "(next in the walk: JOBleaf1)" in await readout_is_true(conn)
    third = await widgets.act(conn, W, "next")
    assert third.outcome["text"].startswith("Node 3 of 5, JOBleaf1: landed as a leaf (state pending, in pending)")
    assert await pending(conn) == [LEAVES[0]]


async def test_previous_node_clears_and_replays_the_walk_one_node_shorter(landed: Any) -> None:
    conn = landed
    for _ in range(3):
        await widgets.act(conn, W, "next")
    back = await widgets.act(conn, W, "previous")
    assert back.outcome["text"] == "Cleared the tree and replayed its walk on Valkey up to node 2 of 5."
    assert not await conn.exists(keyspace.job_key(Q, LEAVES[0])) and await pending(conn) == []
    assert (await row(conn, INNER))["state"] == "awaiting_children"
    await readout_is_true(conn)
    for _ in range(2):
        await widgets.act(conn, W, "previous")
    assert await states(conn, SANDBOX) == {}
    nothing = await widgets.act(conn, W, "previous")
    assert nothing.outcome["kind"] == "info"


async def test_completions_release_the_tree_level_by_level(landed: Any) -> None:
    conn = landed
    walked = await widgets.act(conn, W, "walk")
    assert walked.outcome["text"].endswith("returned (JOBtree, [JOBbranch, JOBtwig]).")
    assert await pending(conn) == [*LEAVES, TWIG]
    await readout_is_true(conn)
    leaves = await widgets.act(conn, W, "complete-level")
    assert leaves.outcome["text"] == "Completed level 2 (JOBleaf1, JOBleaf2): JOBbranch was released into pending."
    assert leaves.outcome["reached"] == ["inner-released"]
    assert await pending(conn) == [INNER, TWIG] and (await row(conn, ROOT))["state"] == "awaiting_children"
    assert await results.dependencies(conn, Q, ROOT) == 2
    await readout_is_true(conn)
    level = await widgets.act(conn, W, "complete-level")
    assert level.outcome["text"] == "Completed level 1 (JOBbranch, JOBtwig): JOBtree was released into pending."
    assert await pending(conn) == [ROOT] and (await row(conn, ROOT))["state"] == "pending"
    assert await results.children_values(conn, Q, ROOT) == {INNER: "JOBbranch done", TWIG: "JOBtwig done"}
    await readout_is_true(conn)


async def test_a_finished_tree_says_the_root_waits_in_pending(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "walk")
    for _ in range(2):
        await widgets.act(conn, W, "complete-level")
    done = await widgets.act(conn, W, "complete-level")
    assert done.outcome["text"] == ("No child of the tree waits in pending: every level is complete, and the root "
                                    "JOBtree was released and waits in pending itself.")
    assert await pending(conn) == [ROOT]
    over = await widgets.act(conn, W, "next")
    assert over.outcome["text"].startswith("Every node has landed: the walk is over.")


async def test_a_job_ahead_of_the_level_in_pending_is_never_claimed(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "walk")
    # A job of someone else's ahead in pending (as a console could add): claim takes the head.
    await conn.hset(keyspace.job_key(Q, "JOBaaa"), mapping={"state": "pending", "payload": "not the tree's"})
    await conn.zadd(keyspace.queue_key(Q, "pending"), {"JOBaaa": 0})
    stopped = await widgets.act(conn, W, "complete-level")
    assert stopped.outcome["text"].endswith("JOBaaa sits ahead of them in pending, so the rest were left alone.")
    assert (await row(conn, "JOBaaa"))["state"] == "pending" and await pending(conn) == ["JOBaaa", *LEAVES, TWIG]


async def test_each_tour_step_replayed_by_a_deep_link_equals_clicking_its_steps(landed: Any) -> None:
    conn = landed
    tour = Tree.tour
    for n in range(len(tour) + 1):
        acted = await widgets.act(conn, W, "goto", step=n)
        assert acted.outcome["text"].startswith(f"Step {n} of {len(tour)}")
        clicks = [(slug, body) for step in tour[:n] for slug, body in step.replay]
        clicked = await replay(conn, W, "s3333333333", clicks)
        assert await states(conn, SANDBOX) == clicked
        assert await readout_is_true(conn) == await readout_is_true(conn, "s3333333333")


async def test_the_tour_reaches_each_of_its_milestones_with_the_step_that_names_it(landed: Any) -> None:
    conn = landed
    for step in Tree.tour:
        reached: set[str] = set()
        for slug, body in step.replay:
            reached |= set((await widgets.act(conn, W, slug, **body)).outcome["reached"])
        assert step.id in reached, (step.id, reached)
    await widgets.act(conn, W, "reset")
    assert set((await widgets.act(conn, W, "walk")).outcome["reached"]) == {s.id for s in Tree.tour[:5]}


@pytest.mark.parametrize("clicks", [
    [("next", {}), ("next", {}), ("next", {})],
    [("walk", {}), ("complete-level", {}), ("previous", {})],
])
async def test_concurrent_clicks_leave_a_state_that_clicking_one_at_a_time_reaches(landed: Any, clicks: Any) -> None:
    conn = landed
    await asyncio.gather(*(widgets.act(conn, W, slug, **body) for slug, body in clicks))
    assert await states(conn, SANDBOX) in await reachable(conn, W, clicks, start=4000)
    await readout_is_true(conn)


async def test_the_readings_measure_what_the_dives_questions_ask(landed: Any) -> None:
    conn = landed
    widget = widgets.WIDGETS[W]
    root = questions.bind(widget, {
        "id": "tree-root", "action": "complete-level", "legend": "Predict: can a worker claim the root after this?",
        "reading": "root-claimable", "when": "root-held-child-pending", "says": "the pending set's answer: {value}",
        "answer": "choice", "choices": [["yes", "Yes"], ["no", "No"]]})
    start = await read(conn, widget, SANDBOX)
    assert questions.offered(widget, [root], start) == []  # nothing landed: no question
    await widgets.act(conn, W, "walk")
    before = await read(conn, widget, SANDBOX)
    assert questions.offered(widget, [root], before) == [root]
    await widgets.act(conn, W, "complete-level")
    now = await read(conn, widget, SANDBOX)
    verdict = questions.judge(widget, root, "yes", now, before)
    assert not verdict.right and verdict.text.startswith("Not quite: you said Yes; Valkey holds the pending set's")
    await widgets.act(conn, W, "complete-level")
    last = await read(conn, widget, SANDBOX)
    assert widget.measure("root-claimable", last, now) == "yes"
    assert widget.measure("root-held-child-pending", last, now) is False


async def test_a_leaf_row_a_console_removed_is_landed_again_by_the_next_node(landed: Any) -> None:
    conn = landed
    for _ in range(4):
        await widgets.act(conn, W, "next")
    await conn.delete(keyspace.job_key(Q, LEAVES[0]))  # what the learner's console may do
    assert (await readout_is_true(conn)).startswith("3 of 5 nodes landed (next in the walk: JOBleaf1)")
    again = await widgets.act(conn, W, "next")
    assert again.outcome["text"].startswith("Node 3 of 5, JOBleaf1: landed as a leaf")
    assert (await readout_is_true(conn)).startswith("4 of 5 nodes landed (next in the walk: JOBtwig)")
