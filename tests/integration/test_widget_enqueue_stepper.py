"""The @enqueue_flow stepper on a real Valkey, driven through the executor as a click is.

Each Next move runs the real script's prefix through that move on an emptied
queue, Previous goes back one, Run atomically runs the whole file, a non-JOB
id is refused at the gate with nothing written, a deep link rebuilds what
clicking does, and every sentence the widget shows is checked against the
keys Valkey holds.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from server.emq import keyspace, registry
from server.web import bodies
from server.widgets import WIDGETS, questions, runner
from server.widgets.base import Prediction
from server.widgets.enqueue_stepper import CHILDREN, MOVES, NON_JOB_CHILD, PARENT, TOTAL, IdChoice
from server.widgets.runner import Lab
from server.widgets.snapshot import Catalog
from server.widgets.turn import Actor
from tests.widgets import SANDBOX, act, show, snapshot_of

from .conftest import members, row

NAME = "enqueue-stepper"
OTHER = "s9876543210"
Q = f"{SANDBOX}.stepper"


def queue_of(sandbox: str) -> str:
    return f"{sandbox}.stepper"


async def keys_of(conn: Any, sandbox: str = SANDBOX) -> dict[str, bytes]:
    """Every key of the stepper's queue, named without the sandbox, with its DUMP."""
    found = {}
    async for name in conn.scan_iter(match=f"emq:{{{queue_of(sandbox)}}}:*"):
        found[name.replace(sandbox + ".", "")] = await conn.dump(name)
    return found


async def place(conn: Any, sandbox: str = SANDBOX) -> dict[str, str]:
    """The stepper's own record (move, choice, refusal) as Valkey keeps it."""
    state = await conn.hgetall(f"lab:{{{queue_of(sandbox)}}}:state")
    return {f: state.get(f, "") for f in ("move", "non_job", "refused", "refused_at")}


async def assert_readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The readout says what the keys hold: count, rows, sets, counter, and the move run."""
    readout = (await snapshot_of(conn, NAME, sandbox)).readout
    queue, count = queue_of(sandbox), len(await keys_of(conn, sandbox))
    at = await place(conn, sandbox)
    if count == 0:
        assert "the stepper's queue holds no key" in readout, readout
    else:
        assert f"{count} key{'s' if count > 1 else ''} in the stepper's queue" in readout, readout
        parent = await row(conn, queue, PARENT)
        assert (f"{PARENT}: state {parent['state']}" if parent else f"{PARENT}: no row") in readout, readout
        deps = await conn.get(keyspace.dependencies_key(queue, PARENT))
        assert (f":dependencies = {deps}" if deps is not None else "no :dependencies") in readout, readout
        for child in (CHILDREN[0], NON_JOB_CHILD if at["non_job"] == "1" else CHILDREN[1]):
            if state := (await row(conn, queue, child)).get("state"):
                assert child in readout and f"state {state}" in readout, readout
    if at["refused"]:
        assert readout.startswith(f"Refused in move {at['refused_at']}") and at["refused"] in readout
        assert ("the script wrote nothing" in readout) == (count == 0)
    elif at["move"] in ("", "0"):
        assert readout.startswith("Before move 1")
    else:
        assert readout.startswith(f"After move {at['move']} of {TOTAL} ({MOVES[int(at['move']) - 1].title})")
    return readout


@pytest.fixture
async def stepper(conn: Any) -> Any:
    await show(conn, NAME)
    return conn


async def test_it_lands_before_move_one_with_an_empty_queue(stepper: Any) -> None:
    assert await keys_of(stepper) == {}
    assert await assert_readout_is_true(stepper) == "Before move 1: the stepper's queue holds no key."


async def test_each_next_move_leaves_what_the_script_has_written_through_it(stepper: Any) -> None:
    gate = await act(stepper, NAME, "next")
    assert gate.outcome["text"].startswith("Move 1 of 4, gate every id") and await keys_of(stepper) == {}
    assert gate.outcome["reached"] == ["move-1"]
    await act(stepper, NAME, "next")
    assert set(await members(stepper, Q, "pending")) == set(CHILDREN)
    assert await stepper.exists(keyspace.job_key(Q, PARENT)) == 0
    assert "3 keys in the stepper's queue" in await assert_readout_is_true(stepper)
    await act(stepper, NAME, "next")
    assert (await row(stepper, Q, PARENT))["state"] == "awaiting_children"
    assert await stepper.exists(keyspace.dependencies_key(Q, PARENT)) == 0
    await assert_readout_is_true(stepper)
    last = await act(stepper, NAME, "next")
    assert "it answered 2" in last.outcome["text"]
    assert await stepper.get(keyspace.dependencies_key(Q, PARENT)) == "2" and len(await keys_of(stepper)) == 5
    assert "5 keys in the stepper's queue" in await assert_readout_is_true(stepper)


async def test_next_at_the_end_of_the_script_changes_nothing_and_says_so(stepper: Any) -> None:
    for _ in range(TOTAL):
        await act(stepper, NAME, "next")
    before = await keys_of(stepper)
    done = await act(stepper, NAME, "next")
    assert done.outcome["kind"] == "info" and "run to its end" in done.outcome["text"]
    assert await keys_of(stepper) == before


async def test_previous_move_rebuilds_the_keys_of_the_move_before(stepper: Any) -> None:
    for _ in range(3):
        await act(stepper, NAME, "next")
    at_three = await keys_of(stepper)
    await act(stepper, NAME, "next")
    back = await act(stepper, NAME, "previous")
    assert back.outcome["text"].startswith("Back to move 3 of 4")
    assert set(back.outcome["reached"]) == {"back", "move-3"}
    assert await keys_of(stepper) == at_three and (await place(stepper))["move"] == "3"
    for _ in range(3):
        await act(stepper, NAME, "previous")
    assert await keys_of(stepper) == {} and (await place(stepper))["move"] == "0"
    stay = await act(stepper, NAME, "previous")
    assert stay.outcome["kind"] == "info" and stay.outcome["text"].startswith("Already before move 1")


async def test_a_non_job_child_is_refused_at_the_gate_with_nothing_written(stepper: Any) -> None:
    chosen = await act(stepper, NAME, "non-job", non_job=True)
    assert "'child2', not JOB-prefixed" in chosen.outcome["text"]
    refused = await act(stepper, NAME, "next")
    assert refused.outcome["kind"] == "refused" and refused.outcome["detail"]["refused_at"] == 1
    assert refused.outcome["text"] == ("The queue was emptied and enqueue_flow ran from its top: it refused in move "
                                       "1 (gate every id) with EMQKIND job id must be JOB-namespaced, before "
                                       "writing a key.")
    assert await keys_of(stepper) == {}
    assert await place(stepper) == {"move": "0", "non_job": "1", "refused": "EMQKIND job id must be JOB-namespaced",
                                     "refused_at": "1"}
    assert "emptied for the run and the script wrote nothing" in await assert_readout_is_true(stepper)
    again = await act(stepper, NAME, "next")
    assert again.outcome["kind"] == "info" and await keys_of(stepper) == {}
    # the whole script refuses too, and the probe of its prefixes finds the gate
    whole = await act(stepper, NAME, "run-atomically")
    assert whole.outcome["kind"] == "refused" and whole.outcome["reached"] == ["refused"]
    assert whole.outcome["detail"]["refused_at"] == 1 and "in move 1 (gate every id)" in whole.outcome["text"]
    assert await keys_of(stepper) == {} and (await place(stepper))["move"] == "0"


async def test_the_choice_of_a_non_job_id_survives_reset(stepper: Any) -> None:
    await act(stepper, NAME, "non-job", non_job=True)
    await act(stepper, NAME, "reset")
    assert (await place(stepper))["non_job"] == "1"
    assert (await snapshot_of(stepper, NAME)).picture["non_job"] is True  # type: ignore[index]
    assert (await act(stepper, NAME, "run-atomically")).outcome["kind"] == "refused"


async def test_run_atomically_writes_what_the_four_moves_write(stepper: Any) -> None:
    for _ in range(TOTAL):
        await act(stepper, NAME, "next")
    stepped = await keys_of(stepper)
    await act(stepper, NAME, "reset")
    whole = await act(stepper, NAME, "run-atomically")
    assert whole.outcome["text"].startswith("The whole script ran as one call and answered 2")
    assert whole.outcome["reached"] == ["atomic"]
    assert await keys_of(stepper) == stepped


async def test_every_reachable_state_has_a_readout_true_to_the_keys(stepper: Any) -> None:
    steps: list[tuple[str, dict[str, Any]]] = [("next", {}), ("previous", {}), ("run-atomically", {}),
                                               ("non-job", {"non_job": True}), ("non-job", {"non_job": False})]
    for walk in itertools.product(steps, repeat=3):
        await act(stepper, NAME, "non-job", non_job=False)
        for slug, body in walk:
            await act(stepper, NAME, slug, **body)
            await assert_readout_is_true(stepper)


async def test_a_readout_stays_true_when_a_console_changes_the_stepper_keys(stepper: Any) -> None:
    for _ in range(TOTAL):
        await act(stepper, NAME, "next")
    await stepper.delete(keyspace.job_key(Q, PARENT))
    assert f"{PARENT}: no row" in await assert_readout_is_true(stepper)
    await stepper.set(keyspace.dependencies_key(Q, PARENT), "7")
    await stepper.zrem(keyspace.queue_key(Q, "pending"), CHILDREN[0])
    assert f"{CHILDREN[0]}: state pending, in no state set" in await assert_readout_is_true(stepper)


async def test_a_deep_link_to_step_n_leaves_what_clicking_steps_one_to_n_leaves(stepper: Any) -> None:
    widget = WIDGETS[NAME]
    for n in range(1, len(widget.tour) + 1):
        linked = await act(stepper, NAME, "goto", step=n)
        assert linked.outcome["text"].startswith(f"Step {n} of {len(widget.tour)} ({widget.tour[n - 1].label})")
        clicked = f"s98765432{n:02d}"  # a sandbox of its own: steps 1..N clicked from the scenario as it lands
        await show(stepper, NAME, clicked)
        for step in widget.tour[:n]:
            for slug, body in step.replay:
                await act(stepper, NAME, slug, clicked, **body)
        assert await keys_of(stepper) == await keys_of(stepper, clicked)
        assert await place(stepper) == await place(stepper, clicked)
        await assert_readout_is_true(stepper)


async def test_a_deep_link_to_a_move_opens_it_even_with_the_non_job_box_ticked(stepper: Any) -> None:
    await act(stepper, NAME, "non-job", non_job=True)
    linked = await act(stepper, NAME, "goto", step=2)
    assert linked.outcome["text"].startswith("Step 2 of 7 (Move 2: land each child, claimable), replayed on Valkey: "
                                             "Move 2 of 4")
    assert await place(stepper) == {"move": "2", "non_job": "0", "refused": "", "refused_at": "0"}
    assert set(await members(stepper, Q, "pending")) == set(CHILDREN)


async def test_concurrent_clicks_leave_a_state_that_clicking_one_at_a_time_reaches(stepper: Any) -> None:
    await asyncio.gather(*(act(stepper, NAME, "next") for _ in range(3)))
    await show(stepper, NAME, OTHER)
    for _ in range(3):
        await act(stepper, NAME, "next", OTHER)
    assert await keys_of(stepper) == await keys_of(stepper, OTHER)
    assert (await place(stepper))["move"] == "3"
    # two different clicks at once: the end state is one of the two orders'
    await act(stepper, NAME, "reset")
    await asyncio.gather(act(stepper, NAME, "non-job", non_job=True), act(stepper, NAME, "next"))
    outcomes = []
    for order in (("non-job", "next"), ("next", "non-job")):
        await act(stepper, NAME, "non-job", OTHER, non_job=False)
        for slug in order:
            await act(stepper, NAME, slug, OTHER, **({"non_job": True} if slug == "non-job" else {}))
        outcomes.append((await keys_of(stepper, OTHER), await place(stepper, OTHER)))
    assert (await keys_of(stepper), await place(stepper)) in outcomes
    await assert_readout_is_true(stepper)


# The questions the dive declares on the stepper (its Markdown), bound here to
# the readings they name, and judged through the executor against Valkey.
NEXT_KEYS = {"id": "keys-after-next-move", "action": "next", "reading": "keys", "when": "can-move",
             "legend": "Predict: how many keys will the stepper's queue hold after the next move?",
             "answer": "number", "says": "{value} keys in the stepper's queue",
             "feedback": [{"answer": "before", "text": "This move writes."}]}
ATOMIC_KEYS = {"id": "keys-after-atomic-non-job", "action": "run-atomically", "reading": "keys",
               "when": "non-job-armed", "answer": "number", "says": "{value} keys in the stepper's queue",
               "legend": "Predict: with a non-JOB child id, how many keys will Run atomically leave?"}


def lab_asking(conn: Any) -> Lab:
    widget = WIDGETS[NAME]
    asked = tuple(questions.bind(widget, spec) for spec in (ATOMIC_KEYS, NEXT_KEYS))
    return Lab(conn, Catalog(dict(WIDGETS), {NAME: asked}))


async def test_the_key_count_question_is_judged_by_the_keys_valkey_holds_after_the_move(stepper: Any) -> None:
    lab, widget, actor = lab_asking(stepper), WIDGETS[NAME], Actor(SANDBOX, SANDBOX)

    async def answer(slug: str, question: str, value: int) -> runner.Acted:
        body = widget.actions[slug].body(predict=Prediction(question, value))
        return await runner.act(lab, widget, actor, slug, body)

    right = await answer("next", "keys-after-next-move", 0)  # move 1, the gate, writes nothing
    assert right.verdict is not None and right.verdict.right and right.verdict.text.startswith("Right")
    wrong = await answer("next", "keys-after-next-move", 0)  # move 2 writes three keys
    assert wrong.verdict is not None and not wrong.verdict.right
    assert wrong.verdict.truth == len(await keys_of(stepper)) == 3
    assert wrong.verdict.feedback == "This move writes."
    await runner.act(lab, widget, actor, "non-job", IdChoice(non_job=True))
    refused = await answer("run-atomically", "keys-after-atomic-non-job", 0)
    assert refused.verdict is not None and refused.verdict.right and refused.verdict.truth == 0


async def test_the_partial_lists_the_real_script_with_each_line_tagged_by_its_move() -> None:
    context = WIDGETS[NAME].partial_context()
    assert context["script_path"] == "server/emq/scripts/enqueue_flow.lua"
    assert [line.text for line in context["lines"]] == registry.script_source("enqueue_flow").splitlines()
    for move in MOVES:
        tagged = [line for line in context["lines"] if line.move == move.number]
        assert tagged[0].text.strip().startswith(f"-- @move {move.number}:")


def test_a_non_job_body_that_is_not_true_or_false_is_refused_with_400_before_anything_runs() -> None:
    for body in (b"{}", b'{"non_job": "yes"}', b'{"non_job": true, "extra": 1}'):
        with pytest.raises(bodies.BadBody) as refused:
            bodies.decode(body, IdChoice)
        assert refused.value.status == 400
