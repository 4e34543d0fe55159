"""One action as a learner runs it: its prediction judged, its tour step counted.

The widget API hands every action here (`run`), which

1. takes the optional `{"predict": {"question": id, "answer": value}}` out of
   the body and checks it against the question open right now (read from
   Valkey): a malformed answer, or one to a question that is not open for this
   action, is a 400 naming the field, before anything is written;
2. runs the action exactly as its button would;
3. reads the widget's keys again and has the question measure its value
   from them: the verdict ("Right: …" / "Not quite: …") opens the outcome
   sentence, so the widget's aria-live region announces it first;
4. counts the step on the learner's record (`server/sandboxes/progress.py`):
   an action that is the next step of the widget's tour moves it on, Reset
   takes it back to 0, a deep link (`goto`) to step N puts it there.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from server import settings
from server.emq.wire import as_dict
from server.sandboxes import progress
from server.widgets import predict
from server.widgets.base import BadInput, Context, Outcome, Widget
from server.widgets.predict import Answer, Moment, Question, Verdict

LIMIT = 10**6  # a number answer beyond this is no prediction of these counters


async def moment(widget: Widget, ctx: Context) -> Moment:
    """The widget's keys and lab hash, read as its snapshot reads them."""
    state = await widget.state(ctx)
    return Moment(await widget.read_views(ctx, state), state)


async def held_and_moment(widget: Widget, ctx: Context) -> tuple[progress.Held, Moment]:
    """The learner's record and the widget's lab hash in one round trip, then its keys."""
    async with ctx.conn.pipeline(transaction=False) as pipe:
        pipe.hmget(progress.progress_key(ctx.sandbox), progress.held_fields(widget.name))
        pipe.hgetall(widget.state_key(ctx))
        raw_held, raw_state = await pipe.execute()
    state = as_dict(raw_state)
    return progress.parse_held(widget.name, raw_held), Moment(await widget.read_views(ctx, state), state)


def take_answer(body: dict[str, Any]) -> tuple[dict[str, Any], Answer | None]:
    """The body without its prediction, and the prediction (shape checked)."""
    if "predict" not in body:
        return body, None
    rest = {k: v for k, v in body.items() if k != "predict"}
    given = body["predict"]
    if not isinstance(given, dict) or set(given) - {"question", "answer"}:
        raise BadInput("'predict' must be an object {\"question\": <id>, \"answer\": <value>}")
    question = given.get("question")
    if not isinstance(question, str) or not question:
        raise BadInput("'predict.question' must be the id of the question the widget shows")
    value = given.get("answer")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadInput("'predict.answer' must be a whole number or one of the question's choices")
    return rest, Answer(question, value)


def open_question(widget: Widget, slug: str, answer: Answer, before: Moment) -> Question:
    """The question this answer is for, if it is open for this action now."""
    question = predict.offer(widget.questions, before)
    if question is None or question.action != slug or question.id != answer.question:
        open_now = f"the open one is {question.id!r} (for {question.action!r})" if question else "none is open"
        raise BadInput(f"'predict.question' {answer.question!r} is not open for {slug!r} now; {open_now}")
    if question.choices:
        values = [v for v, _ in question.choices]
        if answer.value not in values:
            raise BadInput(f"'predict.answer' must be one of: {', '.join(values)}")
    elif not isinstance(answer.value, int) or abs(answer.value) > LIMIT:
        raise BadInput(f"'predict.answer' must be a whole number from {-LIMIT} to {LIMIT}")
    return question


def matches(entry: str | tuple[str, dict[str, Any]], slug: str, body: dict[str, Any]) -> bool:
    """Is this action the tour step `entry` (its slug, and the body the tour gives it)?"""
    want, given = Widget.tour_step(entry)
    return want == slug and all(body.get(k) == v for k, v in given.items())


def moved_to(widget: Widget, slug: str, body: dict[str, Any], outcome: Outcome, at: int) -> int:
    """Where the scenario is on the tour after this action."""
    if slug == "reset":
        return 0
    if slug == "goto":
        step = body.get("step")
        return step if isinstance(step, int) and 0 <= step <= len(widget.tour) else at
    if outcome.kind != "info" and at < len(widget.tour) and matches(widget.tour[at], slug, body):
        return at + 1
    return at


def with_verdict(outcome: Outcome, verdict: Verdict) -> Outcome:
    return dataclasses.replace(outcome, text=f"{verdict.text} {outcome.text}",
                               detail={**outcome.detail, "verdict": verdict.as_json()})


async def after_action(widget: Widget, ctx: Context, outcome: Outcome) -> Moment:
    """What Valkey holds once the action is over: its deferred commands sent
    first (in the same round trip as the lab hash's read), and the lab fields
    it asked to keep as they will be written."""
    async with ctx.conn.pipeline(transaction=False) as pipe:
        for command in ctx.tail:
            pipe.execute_command(*command)
        pipe.hgetall(widget.state_key(ctx))
        raw = (await pipe.execute())[-1]
    ctx.tail.clear()
    state = as_dict(raw)
    kept = {k: v if isinstance(v, str) else json.dumps(v) for k, v in outcome.keep.items()}
    state.update(kept)
    return Moment(await widget.read_views(ctx, state), state)


async def judged(widget: Widget, ctx: Context, slug: str, body: dict[str, Any],
                 answer: Answer | None, before: Moment) -> tuple[Outcome, Verdict | None]:
    """Run the action; with an answer, judge it by the keys Valkey holds afterwards."""
    question = open_question(widget, slug, answer, before) if answer is not None else None
    if question is not None:
        ctx.closing = None  # the verdict reads the keys the action wrote, before its finish
    outcome = await widget.perform(ctx, slug, body)
    if question is None or answer is None:
        return outcome, None
    verdict = predict.judge(question, answer, await after_action(widget, ctx, outcome), before)
    return with_verdict(outcome, verdict), verdict


async def run(widget: Widget, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
    """Run one action for the learner: judged, counted, said.

    The record and (with an answer) the keys before the action are read
    together; the record's new values travel with the action's last round trip
    (`ctx.tail`), so an action without a prediction costs one read more.
    """
    body, answer = take_answer(body)
    if ctx.held is not None:
        held = progress.parse_held(widget.name, ctx.held)
        before = await moment(widget, ctx) if answer is not None else Moment([], {})
    elif answer is None:
        held, before = await progress.held(ctx.conn, ctx.sandbox, widget.name), Moment([], {})
    else:
        held, before = await held_and_moment(widget, ctx)
    outcome, verdict = await judged(widget, ctx, slug, body, answer, before)
    step = progress.Step(len(widget.tour), moved_to(widget, slug, body, outcome, held.at), slug != "goto",
                         verdict.right if verdict else None, verdict.text if verdict else "")
    record = progress.advance(held, step)
    writes = progress.writes(ctx.sandbox, record, step.at, settings.current().sandbox_ttl * 2)
    if ctx.held is not None and any(v is not None for v in ctx.held):
        # the way in renewed an existing record's expiry already (`activity.lua`)
        writes = [w for w in writes if w[0] != "EXPIRE"]
    ctx.tail.extend(writes)
    outcome.detail["progress"] = record.as_json()
    return outcome
