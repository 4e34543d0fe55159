"""The fan-in counter on a real Valkey, driven as clicks are: through the executor."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from server.emq import keyspace
from server.widgets.fanin import CHILDREN, PARENT
from tests.widgets import SANDBOX, act, show, snapshot_of

QUEUE = f"{SANDBOX}.fanin"


async def deps(conn: Any) -> int | None:
    found = await conn.get(keyspace.dependencies_key(QUEUE, PARENT))
    return None if found is None else int(found)


async def test_the_scenario_lands_a_held_parent_on_three_children_once(conn: Any) -> None:
    snaps = await asyncio.gather(*(show(conn, "fanin") for _ in range(4)))
    assert {s.ver for s in snaps} == {snaps[0].ver}  # landed once, under the lock
    assert await deps(conn) == 3
    assert await conn.zrange(keyspace.queue_key(QUEUE, "pending"), 0, -1) == list(CHILDREN)
    assert snaps[0].readout.startswith("0 of 3 children complete → :dependencies = 3")


async def test_each_completion_counts_one_child_down_and_the_last_releases_the_parent(conn: Any) -> None:
    await show(conn, "fanin")
    for left in (2, 1, 0):
        acted = await act(conn, "fanin", "complete-child")
        assert await deps(conn) == left
        assert "complete answered 1" in acted.outcome["text"]
    assert await conn.hget(keyspace.job_key(QUEUE, PARENT), "state") == "pending"
    assert PARENT in await conn.zrange(keyspace.queue_key(QUEUE, "pending"), 0, -1)
    snap = await snapshot_of(conn, "fanin")
    assert snap.readout.startswith("3 of 3 children complete → :dependencies = 0; the parent is released")
    assert set(snap.progress.reached) == {"counted", "released"}


async def test_a_redelivered_completion_answers_gone_and_counts_nothing(conn: Any) -> None:
    await show(conn, "fanin")
    await act(conn, "fanin", "complete-child")
    acted = await act(conn, "fanin", "redeliver")
    assert "0 (no row)" in acted.outcome["text"]
    assert await deps(conn) == 2
    assert "redelivered" in acted.progress.reached


async def test_a_stale_token_is_refused_by_the_fence_and_writes_nothing(conn: Any) -> None:
    await show(conn, "fanin")
    await act(conn, "fanin", "claim")
    before = {k: await conn.dump(k) for k in await conn.keys(f"emq:{{{QUEUE}}}:*")}
    acted = await act(conn, "fanin", "stale")
    assert "EMQSTALE complete token mismatch" in acted.outcome["text"]
    assert {k: await conn.dump(k) for k in await conn.keys(f"emq:{{{QUEUE}}}:*")} == before


async def test_claim_drops_an_id_whose_row_a_late_completion_retired_and_says_so(conn: Any) -> None:
    await show(conn, "fanin")
    await act(conn, "fanin", "claim")  # JOBchild1, token 1
    await act(conn, "fanin", "lapse")  # back in pending; its first worker holds token 1
    late = await act(conn, "fanin", "late")  # matches the row's token, not in active: retired uncounted
    assert "skipped" in late.outcome["reached"]
    assert await conn.exists(keyspace.job_key(QUEUE, "JOBchild1")) == 0
    claimed = await act(conn, "fanin", "claim")
    assert "dropped JOBchild1 from pending" in claimed.outcome["text"]
    assert "JOBchild1" not in await conn.zrange(keyspace.queue_key(QUEUE, "pending"), 0, -1)
    assert await conn.hget(keyspace.job_key(QUEUE, "JOBchild1"), "state") is None  # no bare row made


async def test_the_readout_says_the_parent_is_stuck_when_its_row_is_gone_but_children_wait(conn: Any) -> None:
    await show(conn, "fanin")
    await conn.delete(keyspace.job_key(QUEUE, PARENT))
    snap = await snapshot_of(conn, "fanin")
    assert snap.readout.startswith("The parent's row is gone, yet 3 children still wait and :dependencies = 3")


async def test_a_key_of_the_wrong_type_is_said_and_reset_brings_the_widget_back(conn: Any) -> None:
    await show(conn, "fanin")
    pending = keyspace.queue_key(QUEUE, "pending")
    await conn.delete(pending)
    await conn.set(pending, "oops")
    snap = await snapshot_of(conn, "fanin")
    assert snap.problem is not None and "emq:{fanin}:pending holds a string where the key grammar has a zset" \
        in snap.problem
    from server.widgets.base import Refused
    with pytest.raises(Refused):
        await act(conn, "fanin", "complete-child")
    await act(conn, "fanin", "reset")
    assert await conn.type(pending) == "zset"
    assert (await snapshot_of(conn, "fanin")).problem is None


async def test_a_deep_link_to_step_n_leaves_the_keys_clicking_its_replay_leaves(conn: Any) -> None:
    from server.widgets import WIDGETS
    fanin = WIDGETS["fanin"]
    for step in (3, 7):
        await act(conn, "fanin", "reset")
        for entry in fanin.tour[:step]:
            for slug, body in entry.replay:
                await act(conn, "fanin", slug, **body)
        clicked = (await snapshot_of(conn, "fanin")).readout
        await act(conn, "fanin", "goto", step=step)
        assert (await snapshot_of(conn, "fanin")).readout == clicked


async def test_parallel_completions_and_resets_leave_a_state_clicking_one_at_a_time_reaches(conn: Any) -> None:
    await show(conn, "fanin")
    slugs = ["complete-child", "complete-child", "reset", "complete-child", "claim", "complete-child"] * 2
    await asyncio.gather(*(act(conn, "fanin", s) for s in slugs))
    left = await deps(conn)
    processed = await conn.hlen(keyspace.processed_key(QUEUE, PARENT))
    # whatever order the lock let them in, the counter and the results agree
    assert left is not None and left == 3 - processed
    assert await conn.zcard(keyspace.queue_key(QUEUE, "active")) + processed + await conn.zcard(
        keyspace.queue_key(QUEUE, "pending")) >= 3 - (1 if left == 0 else 0)


async def test_a_prediction_is_judged_by_what_valkey_holds_after_the_action(conn: Any) -> None:
    await show(conn, "fanin")
    right = await act(conn, "fanin", "complete-child", predict={"question": "deps-after-complete", "answer": 2})
    assert right.verdict is not None and right.verdict.right and right.verdict.text.startswith("Right")
    # behind the widget's back, the counter moves: the verdict follows Valkey, not a stored answer
    await conn.set(keyspace.dependencies_key(QUEUE, PARENT), 7)
    wrong = await act(conn, "fanin", "complete-child", predict={"question": "deps-after-complete", "answer": 1})
    assert wrong.verdict is not None and not wrong.verdict.right
    assert "you said 1; Valkey holds :dependencies = 6" in wrong.verdict.text


async def test_any_answer_runs_the_action_and_an_odd_one_is_judged_not_quite(conn: Any) -> None:
    await show(conn, "fanin")
    for answer in (1e9, 2.5, "two", -3):
        acted = await act(conn, "fanin", "reset")
        acted = await act(conn, "fanin", "complete-child",
                          predict={"question": "deps-after-complete", "answer": answer})
        assert acted.verdict is not None and acted.verdict.text.startswith("Not quite")
        assert await deps(conn) == 2  # the action ran


async def test_the_usual_wrong_answer_gets_its_authored_feedback_only_when_given(conn: Any) -> None:
    await show(conn, "fanin")
    await act(conn, "fanin", "complete-child")
    redelivered = await act(conn, "fanin", "redeliver", predict={"question": "deps-after-redeliver", "answer": 1})
    assert redelivered.verdict is not None and "counts the same child twice" in redelivered.verdict.feedback
    other = await act(conn, "fanin", "redeliver", predict={"question": "deps-after-redeliver", "answer": 0})
    assert other.verdict is not None and other.verdict.feedback == ""
    assert (await snapshot_of(conn, "fanin")).progress.asked == 2
