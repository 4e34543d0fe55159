"""What the class thinks (pure): its learners' answers counted per question, mode and round, one
entry per value and verdict (a value can be right at one step and wrong at another); a second
round also says how the answers moved."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from server.sandboxes.answers import Given, Value

Key = tuple[str, str, str, int | None, int | None]  # widget, question, mode, round, step


class Count(msgspec.Struct, frozen=True):
    value: Value
    count: int
    right: bool


class Move(msgspec.Struct, frozen=True):
    value: Value
    first: int
    second: int


class Counted(msgspec.Struct):
    widget: str
    question: str
    mode: str
    step: int | None
    round: int | None
    legend: str
    answered: int
    answers: list[Count]
    missing: list[str]  # the learners (sandbox ids, joining order) who have not answered
    common_wrong: Count | None = None
    feedback: str = ""  # the authored note of the most common wrong answer
    moved: list[Move] = []  # a second round: each value, first vote -> second vote
    changed: int = 0  # learners whose second vote differs from their first
    now_right: int = 0  # of them, those whose second vote is right

    @property
    def key(self) -> Key:
        return (self.widget, self.question, self.mode, self.round, self.step)

    def contract(self) -> dict[str, Any]:
        """The entry of answers.json: exactly the fields DESIGN.md gives (`across_modes` counts it)."""
        return {"widget": self.widget, "question": self.question, "step": self.step, "round": self.round,
                "legend": self.legend, "answered": self.answered,
                "answers": [{"value": c.value, "count": c.count, "right": c.right} for c in self.answers]}


def _same(value: Value) -> str:
    """A value's identity for counting: 2 and "2" stay apart, as they were given."""
    return json.dumps(value, sort_keys=True)


def group(given: Sequence[Given], learners: Sequence[str]) -> dict[Key, list[Given]]:
    members = set(learners)
    found: dict[Key, list[Given]] = {}
    for answer in given:
        if answer.learner in members:
            step = answer.step if answer.round is not None else None
            found.setdefault((answer.widget, answer.question, answer.mode, answer.round, step), []).append(answer)
    return found


def count(key: Key, answers: Sequence[Given], learners: Sequence[str], legend: str) -> Counted:
    tally: Counter[tuple[str, bool]] = Counter((_same(a.value), a.right) for a in answers)
    values = {_same(a.value): a.value for a in answers}
    counts = [Count(values[v], n, right) for (v, right), n in tally.most_common()]  # ties: in the order first met
    wrong = next((c for c in counts if not c.right), None)
    notes = Counter(a.feedback for a in answers
                    if wrong is not None and not a.right and _same(a.value) == _same(wrong.value) and a.feedback)
    who = {a.learner for a in answers}
    widget, question, mode, round_, step = key
    return Counted(widget, question, mode, step, round_, legend, len(who), counts,
                   [learner for learner in learners if learner not in who], wrong,
                   notes.most_common(1)[0][0] if notes else "")


def moved(first: Counted, second: Counted, answers: Mapping[Key, Sequence[Given]]) -> None:
    """Fill `second` with how the answers moved from `first` (peer instruction's two votes)."""
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    values: dict[str, Value] = {}
    for tally, round_ in ((before, first), (after, second)):
        for c in round_.answers:
            tally[_same(c.value)] += c.count
            values[_same(c.value)] = c.value
    order = sorted(values, key=lambda v: (-after[v], -before[v]))
    second.moved = [Move(values[v], before[v], after[v]) for v in order]
    earlier = {a.learner: _same(a.value) for a in answers.get(first.key, ())}
    changed = [a for a in answers.get(second.key, ()) if a.learner in earlier and earlier[a.learner] != _same(a.value)]
    second.changed, second.now_right = len(changed), sum(a.right for a in changed)


def across_modes(given: Sequence[Given]) -> list[Given]:
    """The answers as answers.json counts them, whatever the mode (DESIGN.md's fields name none)."""
    return [msgspec.structs.replace(g, mode="any") for g in given]


def counted(given: Sequence[Given], learners: Sequence[str],
            legends: Mapping[tuple[str, str], str]) -> list[Counted]:
    """Every question the class has met, counted per round, in the order met."""
    groups = group(given, learners)
    found = {key: count(key, answers, learners, legends.get(key[:2], key[1])) for key, answers in groups.items()}
    for (widget, question, mode, round_, step), second in found.items():
        first = found.get((widget, question, mode, 1, step))
        if round_ == 2 and first is not None:
            moved(first, second, groups)
    return list(found.values())
