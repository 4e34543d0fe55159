"""Predictions: a question asked before an action, judged by what Valkey holds after it.

A `Question` belongs to one action of one widget (its slug) and is offered
while its condition holds on the keys just read, so every tab of a sandbox
shows the same question. It never carries its answer: `measure` reads the
truth from the keys Valkey holds after the action ran (the same reading a
snapshot makes), with the reading from just before it for questions about
what changed. The verdict compares the learner's answer with that value and
says the value in words:

    Right: Valkey now holds :dependencies = 2.
    Not quite: you said 5; Valkey now holds :dependencies = 1.

This module is pure: it reads nothing and writes nothing. Running an action
with its answer (and counting the learner's progress) is
`server/widgets/attempt.py`; the questions themselves are
`server/widgets/questions.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from server.widgets.snapshot import QueueView

Value = int | str


@dataclass(frozen=True)
class Moment:
    """What Valkey held at one moment: a widget's queues and its lab hash."""

    views: list[QueueView]
    state: dict[str, str]


# (after, before) -> the measured value; before is the moment the question was asked.
Measure = Callable[[Moment, Moment], Value]
Condition = Callable[[Moment], bool]


def always(moment: Moment) -> bool:
    return True


@dataclass(frozen=True)
class Question:
    id: str
    action: str  # the slug of the action whose button carries the answer
    legend: str  # starts with "Predict"
    measure: Measure
    # The measured value in words, as Valkey holds it: "{value}" is filled in
    # (a number as it is, a choice by its label).
    fact: str
    when: Condition = always
    choices: tuple[tuple[str, str], ...] = ()  # (value, label); none: a number question

    def __post_init__(self) -> None:
        if not self.legend.startswith("Predict"):
            raise ValueError(f"question {self.id}: a legend starts with 'Predict'")

    @property
    def kind(self) -> str:
        return "choice" if self.choices else "number"

    def words(self, value: Value) -> str:
        """A value as the learner reads it: a choice by its label."""
        return dict(self.choices).get(str(value), str(value))

    def as_json(self) -> dict[str, Any]:
        """What travels in the snapshot: the question, never its answer."""
        return {
            "id": self.id, "action": self.action, "legend": self.legend, "kind": self.kind,
            "choices": [{"value": v, "label": label} for v, label in self.choices],
        }


@dataclass(frozen=True)
class Answer:
    question: str
    value: Value


@dataclass(frozen=True)
class Verdict:
    question: str
    answer: Value
    truth: Value
    right: bool
    text: str
    legend: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "legend": self.legend, "answer": self.answer,
                "truth": self.truth, "right": self.right, "text": self.text}


def offer(questions: tuple[Question, ...], moment: Moment) -> Question | None:
    """The question open now: the first whose condition holds on these keys."""
    return next((q for q in questions if q.when(moment)), None)


def offered(questions: tuple[Question, ...], views: list[QueueView], state: dict[str, str]) -> dict[str, Any] | None:
    """The open question as a snapshot carries it (None when nothing is asked)."""
    question = offer(questions, Moment(views, state))
    return question.as_json() if question is not None else None


def fact_of(question: Question, truth: Value) -> str:
    return question.fact.format(value=question.words(truth))


def judge(question: Question, answer: Answer, after: Moment, before: Moment) -> Verdict:
    """Compare the answer with what Valkey holds after the action."""
    truth = question.measure(after, before)
    right = str(answer.value) == str(truth)
    fact = fact_of(question, truth)
    if right:
        text = f"Right: Valkey now holds {fact}."
    else:
        text = f"Not quite: you said {question.words(answer.value)}; Valkey now holds {fact}."
    return Verdict(question.id, answer.value, truth, right, text, question.legend)


# -- measures shared by several widgets ------------------------------------------


def counter(job_id: str, queue_at: int = 0) -> Measure:
    """A job's `:dependencies` as Valkey holds it after the action."""

    def measure(after: Moment, before: Moment) -> Value:
        key = after.views[queue_at].row(job_id, ":dependencies")
        return int(key.value) if key is not None else "no key"

    return measure


def counter_above(job_id: str, low: int, queue_at: int = 0) -> Condition:
    """While a job's counter is above `low` (a held parent with children left)."""

    def when(moment: Moment) -> bool:
        key = moment.views[queue_at].row(job_id, ":dependencies")
        return key is not None and int(key.value) > low

    return when


def key_count(queue_at: int | None = None) -> Measure:
    """How many keys the widget's queues (or one of them) hold after the action."""

    def measure(after: Moment, before: Moment) -> Value:
        views = after.views if queue_at is None else [after.views[queue_at]]
        return sum(len(v.keys) for v in views)

    return measure


def new_keys(after: Moment, before: Moment) -> Value:
    """How many keys the action added over every queue of the widget."""
    return sum(len(v.keys) for v in after.views) - sum(len(v.keys) for v in before.views)
