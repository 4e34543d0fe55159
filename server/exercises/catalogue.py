"""The exercises: what each asks, the script it starts from, the checks it runs.

A starter is the course script's header and a body from ``starters/`` with its ``-- @include``
markers expanded (the text Valkey will run), or a variant in ``server/emq/scripts/variants/``; it
fails every check in ``learner_checks``. Titles avoid the other widgets' region words.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Final

from server.emq import registry
from server.exercises.checks import Check
from server.exercises.deliver_checks import DELIVER_CHECKS
from server.exercises.errors import UnknownExercise
from server.exercises.fanin_checks import FANIN_CHECKS

STARTERS: Final = Path(__file__).resolve().parent / "starters"


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    task: str
    page: str  # the dive the exercise sits on
    script: str  # the course script the learner's replaces
    starter_file: str  # in starters/ ("" for a variant)
    checks: tuple[Check, ...]
    learner_checks: frozenset[str]
    variant: str = ""  # else the starter is this variant of `script` (server/emq/registry.py)

    @cached_property
    def starter(self) -> str:
        if self.variant:
            return registry.variant_source(self.variant, self.script)
        return registry.dressed(self.script, self.starter_file, (STARTERS / self.starter_file).read_text("utf-8"))

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "title": self.title, "task": self.task,
                "starter": self.starter, "checks": [check.name for check in self.checks]}


_FANIN_TASK = (
    "Write the fan-in of complete for a child in its parent's queue. The token fence, the cross-queue "
    "arm and the shared tail are written; in the marked branch, count the child off its parent: record "
    "its result in :processed, take one off :dependencies, and when that reaches zero put the parent in "
    "pending with state pending, if it is still held (awaiting_children). Count only in the call that "
    "took the child out of active, so that no second or late completion counts it again and the parent "
    "is released exactly once."
)
_REDELIVERY_TASK = (
    "This complete passes most checks, yet a parent can be released before its last child has finished. "
    "A worker whose lease lapsed still sends its completion after the job went back to pending, and the "
    "script counts it: its decrement sits outside the was-active guard. Run the checks, read what "
    "Valkey holds after the late completion, and move the counting where only the call that took the "
    "child out of active reaches it."
)
_DELIVER_TASK = (
    "Write the branch of flow_deliver that applies a completion, or a failure whose policy ignores the "
    "dependency, on the parent's slot: record the value (a result in :processed, an error in :ignored), "
    "take one off :dependencies, and release the parent at zero. The Pump delivers an entry again when "
    "it crashed before its trim, so a second delivery of the same entry must change nothing and answer "
    "2. The failure branch that fails the parent is written."
)

EXERCISES: Final = {
    exercise.name: exercise
    for exercise in (
        Exercise(
            name="fan-in", title="Count the children down", task=_FANIN_TASK,
            page="/flows/parent-and-children", script="complete", starter_file="fan_in.lua",
            checks=FANIN_CHECKS,
            learner_checks=frozenset({"three children", "the last child", "a redelivered completion",
                                      "a completion after the lease lapsed", "a parent already failed",
                                      "a parent already released"}),
        ),
        Exercise(
            name="redelivery", title="Make a redelivery harmless", task=_REDELIVERY_TASK,
            page="/flows/parent-and-children", script="complete", starter_file="",
            checks=FANIN_CHECKS,
            learner_checks=frozenset({"a completion after the lease lapsed"}), variant="complete_early_release",
        ),
        Exercise(
            name="deliver", title="Deliver a completion once", task=_DELIVER_TASK,
            page="/flows/cross-queue", script="flow_deliver", starter_file="deliver.lua",
            checks=DELIVER_CHECKS,
            learner_checks=frozenset({"three children", "the last child", "a crash before trim",
                                      "released once", "an ignored failure"}),
        ),
    )
}


def names() -> list[str]:
    return list(EXERCISES)


def get(name: str) -> Exercise:
    """The exercise called ``name``, or ``UnknownExercise`` (404)."""
    found = EXERCISES.get(name)
    if found is None:
        raise UnknownExercise(f"There is no exercise called {name!r}; there are: {', '.join(EXERCISES)}.")
    return found
