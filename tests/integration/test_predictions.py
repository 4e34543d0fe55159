"""Predictions against a real Valkey: every verdict follows the keys Valkey holds.

The strongest check is the first: the counter is changed in Valkey behind the
widget's back, and the verdict follows Valkey, not the scenario's script.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from server.emq import keyspace
from server.sandboxes import progress
from server.widgets import WIDGETS, attempt
from server.widgets.base import BadInput, Context, Outcome, Widget
from server.widgets.fanin import PARENT

SANDBOX = "s0123456789"


async def act(widget: Widget, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
    """One action as the API runs it: under the widget's lock, through `attempt.run`."""
    outcome, _ = await widget.run(ctx, slug, body, perform=attempt.run)
    return outcome


def predict(question: str, answer: Any) -> dict[str, Any]:
    return {"predict": {"question": question, "answer": answer}}


@pytest.fixture
async def fanin(conn: Any) -> tuple[Widget, Context]:
    widget, ctx = WIDGETS["fanin"], Context(conn, SANDBOX)
    await widget.show(ctx)
    return widget, ctx


async def test_the_fanin_snapshot_asks_for_dependencies_before_every_completion(fanin) -> None:
    widget, ctx = fanin
    for _ in range(3):
        question = (await widget.snapshot(ctx))["question"]
        assert question["id"] == "fanin-dependencies" and question["action"] == "complete-child"
        assert question["legend"].startswith("Predict") and question["kind"] == "number"
        assert "answer" not in question and "truth" not in question
        await act(widget, ctx, "complete-child", {})
    assert (await widget.snapshot(ctx))["question"]["id"] == "fanin-redeliver"


async def test_a_right_and_a_wrong_answer_are_judged_by_the_counter_valkey_holds(fanin) -> None:
    widget, ctx = fanin
    right = await act(widget, ctx, "complete-child", predict("fanin-dependencies", 2))
    assert right.text.startswith("Right: Valkey now holds :dependencies = 2.")
    wrong = await act(widget, ctx, "complete-child", predict("fanin-dependencies", 5))
    assert wrong.text.startswith("Not quite: you said 5; Valkey now holds :dependencies = 1.")
    assert wrong.detail["verdict"] == {"question": "fanin-dependencies", "legend": widget.questions[0].legend,
                                       "answer": 5, "truth": 1, "right": False, "text": wrong.detail["verdict"]["text"]}


async def test_the_verdict_follows_valkey_when_the_counter_is_changed_behind_the_widgets_back(fanin, conn) -> None:
    widget, ctx = fanin
    queue = widget.queues(ctx)[0]
    # Between land and action, Valkey is told something no code of the widget knows.
    await conn.set(keyspace.dependencies_key(queue, PARENT), 7)
    outcome = await act(widget, ctx, "complete-child", predict("fanin-dependencies", 6))
    assert outcome.text.startswith("Right: Valkey now holds :dependencies = 6.")
    assert await conn.get(keyspace.dependencies_key(queue, PARENT)) == "6"
    # The answer the scenario would have given (3 - 1) is now wrong.
    await conn.set(keyspace.dependencies_key(queue, PARENT), 40)
    outcome = await act(widget, ctx, "complete-child", predict("fanin-dependencies", 1))
    assert outcome.text.startswith("Not quite: you said 1; Valkey now holds :dependencies = 39.")


@pytest.mark.parametrize("body, field", [
    ({"predict": 3}, "'predict'"),
    ({"predict": {"question": 3, "answer": 2}}, "'predict.question'"),
    ({"predict": {"question": "fanin-dependencies", "answer": True}}, "'predict.answer'"),
    ({"predict": {"question": "fanin-dependencies", "answer": "two"}}, "'predict.answer'"),
    ({"predict": {"question": "fanin-dependencies", "answer": 10**9}}, "'predict.answer'"),
    ({"predict": {"question": "fanin-redeliver", "answer": 2}}, "'predict.question'"),
    ({"predict": {"question": "fanin-dependencies", "answer": 2, "extra": 1}}, "'predict'"),
])
async def test_a_bad_prediction_is_refused_naming_the_field_and_nothing_is_written(fanin, conn, body, field) -> None:
    widget, ctx = fanin
    before = {k: await conn.dump(k) for k in sorted(await conn.keys("*"))}
    with pytest.raises(BadInput, match=re.escape(field)):
        await act(widget, ctx, "complete-child", body)
    assert {k: await conn.dump(k) for k in sorted(await conn.keys("*"))} == before


async def test_an_answer_for_another_action_is_refused(fanin) -> None:
    widget, ctx = fanin
    with pytest.raises(BadInput, match="not open for 'redeliver'"):
        await act(widget, ctx, "redeliver", predict("fanin-dependencies", 2))


async def test_the_tour_counts_steps_and_the_widget_is_done_at_its_last(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "complete-child", predict("fanin-dependencies", 2))
    await act(widget, ctx, "complete-child", predict("fanin-dependencies", 9))
    await act(widget, ctx, "reset", {})  # Reset restarts the scenario, not the record
    record = (await progress.read(conn, SANDBOX))["fanin"]
    # the second completion is off the tour (its step 2 is the redelivery): still 1 reached
    assert (record.reached, record.steps, record.asked, record.right, record.done) == (1, len(widget.tour), 2, 1, False)
    for slug in widget.tour:
        await act(widget, ctx, str(slug), {})
    record = (await progress.read(conn, SANDBOX))["fanin"]
    assert (record.reached, record.done) == (len(widget.tour), True)
    assert await conn.hget(progress.progress_key(SANDBOX), "done:fanin") == "1"
    assert await conn.ttl(progress.progress_key(SANDBOX)) > 0


async def test_progress_is_kept_per_sandbox(fanin, conn) -> None:
    widget, ctx = fanin
    other = Context(conn, "s9876543210")
    await widget.show(other)
    await act(widget, ctx, "complete-child", predict("fanin-dependencies", 2))
    assert (await progress.read(conn, SANDBOX))["fanin"].right == 1
    assert await progress.read(conn, other.sandbox) == {}


async def test_a_deep_link_puts_the_scenario_at_its_step_and_goto_is_counted_from_there(fanin, conn) -> None:
    widget, ctx = fanin
    await act(widget, ctx, "goto", {"step": 1})
    held = await progress.held(conn, SANDBOX, "fanin")
    assert (held.at, held.record.reached) == (1, 0)
    await act(widget, ctx, "redeliver", {})
    record = (await progress.read(conn, SANDBOX))["fanin"]
    assert record.reached == 2 and not record.done


async def play_with_every_question(widget: Widget, ctx: Context) -> list[tuple[str, bool, bool]]:
    """Play the tour; where a question is open, answer it wrong, then replay the
    step with the value the wrong verdict named: that one must be right."""
    judged = []
    await widget.reset(ctx)
    for i, entry in enumerate(widget.tour):
        slug, body = widget.tour_step(entry)
        question = (await widget.snapshot(ctx))["question"]
        if question is None or question["action"] != slug:
            await act(widget, ctx, slug, body)
            continue
        guess: Any = question["choices"][0]["value"] if question["choices"] else 999
        first = await act(widget, ctx, slug, {**body, **predict(question["id"], guess)})
        truth = first.detail["verdict"]["truth"]
        await act(widget, ctx, "goto", {"step": i})
        second = await act(widget, ctx, slug, {**body, **predict(question["id"], truth)})
        judged.append((question["id"], first.detail["verdict"]["right"], second.detail["verdict"]["right"]))
    return judged


# Widgets built alongside the predictions, whose questions are still to come.
ASKS_NOTHING_YET = {"console"}


@pytest.mark.parametrize("name", sorted(n for n in WIDGETS if n not in ASKS_NOTHING_YET))
async def test_every_widget_asks_on_its_tour_and_valkey_judges_the_answers(conn, name) -> None:
    widget, ctx = WIDGETS[name], Context(conn, SANDBOX)
    await widget.show(ctx)
    judged = await play_with_every_question(widget, ctx)
    assert judged, f"{name} asks nothing on its tour"
    for question, _, again in judged:
        assert again, f"{name}: {question} judged the value Valkey named as wrong"


async def test_the_no_js_trace_asks_each_question_with_the_answer_valkey_gave(conn) -> None:
    from server.widgets import traces

    trace = await traces.record(conn, WIDGETS["fanin"], "strace00001")
    asked = [(row.label, row.question, row.answer) for row in trace.rows if row.question]
    question = "Predict: what will :dependencies be after this completion?"
    # the tour completes a child (3 -> 2), walks the guards, then completes another (-> 1)
    assert asked == [("Complete child", question, f"Valkey held :dependencies = {n}.") for n in (2, 1)]


async def test_the_record_sums_to_widgets_done_and_predictions_for_a_roster(fanin, conn) -> None:
    widget, ctx = fanin
    first, *rest = widget.tour
    assert first == "complete-child"
    await act(widget, ctx, "complete-child", predict("fanin-dependencies", 2))  # right: 3 -> 2
    for step in rest:
        slug, body = widget.tour_step(step)
        if slug == "complete-child":
            body = predict("fanin-dependencies", 0)  # not quite: 2 -> 1
        await act(widget, ctx, slug, body)
    assert progress.overall(await progress.read(conn, SANDBOX)) == {"done": 1, "asked": 2, "right": 1}
