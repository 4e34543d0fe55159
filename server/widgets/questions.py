"""Predictions: questions declared in the dives, checked against their widget at
start (a broken one stops the site, naming the dive and line), and judged by
what Valkey holds after the action, never by a stored answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from server.widgets.base import Value, Widget
from server.widgets.view import Moment


class Feedback(msgspec.Struct, frozen=True):
    answer: str  # a literal value, or "before", "before-1", "before+1"
    text: str


class Question(msgspec.Struct, frozen=True):
    id: str
    widget: str
    action: str
    legend: str
    reading: str
    says: str  # the fact in words; "{value}" is what Valkey holds
    answer: Literal["number", "choice"] = "number"
    when: str | None = None
    # a reading naming what the question is about now (the child the action takes):
    # the legend's "{subject}" is filled with it, so a mixed flow's question says which child
    subject: str | None = None
    choices: tuple[tuple[str, str], ...] = ()  # (value, label)
    feedback: tuple[Feedback, ...] = ()

    def words(self, value: object) -> str:
        """A value as the learner reads it: a choice by its label."""
        return dict(self.choices).get(str(value), "nothing" if value is None else str(value))

    def general(self) -> str:
        """The legend as the class page and answers.json list it: for no moment in particular."""
        return self.legend.replace("{subject}", "the next child")

    def as_json(self) -> Asked:
        """What a snapshot carries: the question, never its answer."""
        return Asked(id=self.id, action=self.action, legend=self.legend, kind=self.answer,
                     choices=[Choice(value=v, label=label) for v, label in self.choices])


class Choice(msgspec.Struct):
    value: str
    label: str


class Asked(msgspec.Struct, kw_only=True):
    """A question open now, as a snapshot carries it (the page draws its fieldset)."""

    id: str
    action: str
    legend: str
    kind: Literal["number", "choice"]
    choices: list[Choice]


class Verdict(msgspec.Struct, frozen=True):
    question: str
    legend: str
    answer: Value
    truth: Value
    right: bool
    text: str
    feedback: str = ""
    hidden: bool = False  # an asked question's verdict kept from the learner until Reveal


class BadQuestion(ValueError):
    """A declaration that does not fit its widget (the message names what)."""


def bind(widget: Widget, spec: Mapping[str, Any]) -> Question:
    """A declared question (its shape checked by server/content), checked against its widget."""
    try:  # the spec's `line` is no field of a Question: convert leaves it out
        question = msgspec.convert({**spec, "widget": widget.name}, Question)
    except msgspec.ValidationError as exc:
        raise BadQuestion(f"question {spec.get('id')!r}: {exc}") from exc
    known = ", ".join(sorted(widget.readings))
    if question.action not in widget.actions:
        raise BadQuestion(f"question {question.id!r}: widget {widget.name!r} has no action {question.action!r}")
    for name in (question.reading, question.when, question.subject):
        if name is not None and name not in widget.readings:
            raise BadQuestion(f"question {question.id!r}: no reading {name!r} on {widget.name!r} (known: {known})")
    if not question.legend.startswith("Predict"):
        raise BadQuestion(f"question {question.id!r}: a legend starts with 'Predict'")
    if ("{subject}" in question.legend) != (question.subject is not None):
        raise BadQuestion(f"question {question.id!r}: a legend holds {{subject}} when, and only when, "
                          "the question names a subject reading")
    if (question.answer == "choice") != bool(question.choices):
        raise BadQuestion(f"question {question.id!r}: choices go with answer: choice, and only with it")
    return question


def offered(widget: Widget, questions: Sequence[Question], moment: Moment) -> list[Question]:
    """The questions open now, one per action: for each action, the first
    declared whose `when` holds on these keys (every page asks the same), its
    legend naming its subject as these keys have it."""
    found: dict[str, Question] = {}
    for question in questions:
        if question.action not in found and (
                question.when is None or widget.measure(question.when, moment, moment)):
            found[question.action] = _named(widget, question, moment)
    return list(found.values())


def _named(widget: Widget, question: Question, moment: Moment) -> Question:
    if question.subject is None:
        return question
    subject = widget.measure(question.subject, moment, moment)
    return msgspec.structs.replace(question, legend=question.legend.replace("{subject}", str(subject)))


def ran(kind: str) -> bool:
    """Whether a press (its outcome's `kind`) did something a question can be judged on. An `info` outcome is a
    press that found nothing to act on (no child left, nothing claimed): its answer is
    neither judged nor counted, in the learner's progress or in the class's answers."""
    return kind != "info"


UNJUDGED = " Your prediction was not judged: this press changed nothing."
VEILED = "Your answer {answer} is in; its verdict shows when your instructor reveals the class's answers."


def veiled(verdict: Verdict, question: Question) -> Verdict:
    """An asked question's verdict as the learner sees it before Reveal (own sandboxes): their
    answer, not whether Valkey bore it out, so the second round comes before the answer."""
    return Verdict(verdict.question, verdict.legend, verdict.answer, None, False,
                   VEILED.format(answer=question.words(verdict.answer)), hidden=True)


def judge(widget: Widget, question: Question, answer: object, now: Moment, before: Moment) -> Verdict:
    truth = widget.measure(question.reading, now, before)
    said = question.says.format(value=question.words(truth))
    shown = _answer(answer)
    if _same(shown, truth):
        return Verdict(question.id, question.legend, shown, truth, True, f"Right: Valkey holds {said}.")
    text = f"Not quite: you said {question.words(shown)}; Valkey holds {said}."
    note = _feedback(widget, question, shown, before)
    return Verdict(question.id, question.legend, shown, truth, False, f"{text} {note}".strip(), note)


def _feedback(widget: Widget, question: Question, answer: Value, before: Moment) -> str:
    earlier = widget.measure(question.reading, before, before) if question.feedback else None
    for note in question.feedback:
        base, sign, step = note.answer.partition("+") if "+" in note.answer else note.answer.partition("-")
        if base.strip() == "before" and isinstance(earlier, int) and not isinstance(earlier, bool):
            offset = int(step) if step.strip().isdecimal() else 0
            expected: Value = earlier + (offset if sign == "+" else -offset)
        else:
            expected = note.answer
        if _same(answer, expected):
            return note.text
    return ""


def _answer(raw: object) -> Value:
    """The learner's answer as given: a number stays a number (2.0 is 2), text stays text."""
    if isinstance(raw, bool) or raw is None:
        return None if raw is None else str(raw).lower()
    if isinstance(raw, float):
        return int(raw) if math.isfinite(raw) and raw.is_integer() else raw
    if isinstance(raw, int | str):
        return raw if isinstance(raw, int) else raw.strip()[:200]
    return str(raw)[:200]


def _same(answer: Value, truth: Value) -> bool:
    if isinstance(answer, str) and not isinstance(truth, str):
        try:
            return float(answer) == float(truth)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
    return str(answer) == str(truth)

