"""What a race left, read from the keys: the timeline, the invariants, the picture.

The invariants are decided only from what Valkey holds after the run: the
parent's row, `:dependencies`, `:processed`, the state sets, the queue's
`metrics:completed` count and the timeline the workers wrote. They are safety
rules; whether the parent was released at all is said beside them.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from server.widgets.race_run import PARENT, child_ids
from server.widgets.view import Moment


class Entry(msgspec.Struct, frozen=True):
    worker: str
    op: str
    job: str
    reply: str


class Invariant(msgspec.Struct, frozen=True):
    id: str
    held: bool
    text: str


class Choices(msgspec.Struct, frozen=True):
    workers: int = 3
    children: int = 6
    faults: tuple[str, ...] = ("crash", "lapse", "twice")
    early_release: bool = False
    seed: int = 7


class Picture(msgspec.Struct, frozen=True):
    seed: int
    status: str  # ready | running | done
    recorded: bool  # the tour's race, played when the sandbox first showed the widget
    ended: str
    choices: Choices
    script: str  # the complete the workers ran
    parent: str  # the parent's state, in words
    dependencies: int | None
    processed: int
    timeline: list[Entry]
    invariants: list[Invariant]
    broken: str  # one sentence: which invariant broke, and why ("" when none)
    held: str  # one sentence when a finished run left the parent held, and why ("" otherwise)


def timeline(moment: Moment) -> list[Entry]:
    found = sorted((k, v) for k, v in moment.state.items() if k.startswith("race:t:"))
    out = []
    for _, raw in found:
        try:
            out.append(msgspec.convert(json.loads(raw), Entry))
        except (ValueError, msgspec.ValidationError):
            continue  # a half-written entry never breaks the picture
    return out


def invariants(moment: Moment, n: int) -> list[Invariant]:
    view = moment.first
    children = set(child_ids(n))
    deps = view.number(PARENT, ":dependencies")
    processed = view.fields(PARENT, ":processed")
    state = view.fields(PARENT).get("state")
    released = state is not None and state != "awaiting_children"
    recorded = len(set(processed) & children)
    live = [c for c in children if view.row(c) is not None and view.sets_of(c)]
    completed = _completed(moment)
    counted_ok = deps is not None and deps >= 0 and n - deps == recorded and set(processed) <= children
    counted = Invariant("counted-once", counted_ok, (
        f"Each child counted once: :processed holds {recorded} and :dependencies = {deps}, {n} children in all."
        if counted_ok else
        f"A child was counted without its result: :dependencies fell to {deps}, yet :processed holds "
        f"{recorded} of {n}."))
    early = released and (recorded < n or deps != 0)
    below = deps is not None and deps < 0
    release_ok = not early and not below
    release_text = (f"The parent was released before every child was counted: :processed held {recorded} of {n}."
                    if early else f":dependencies went below zero ({deps}): a child was counted twice."
                    if below else "The parent was released once, after its last child: :dependencies = 0."
                    if released else f"The parent was never released early: it is still held, :dependencies "
                    f"= {deps}.")
    lost = n - len(live) - completed
    none_lost = Invariant("none-lost", lost <= 0, (
        f"No child lost: {completed} completed, {len(live)} still waiting to run." if lost <= 0 else
        f"{lost} child(ren) vanished: neither completed nor waiting in a state set."))
    return [counted, Invariant("released-once", release_ok, release_text), none_lost]


def _completed(moment: Moment) -> int:
    found = moment.first.get("metrics:completed")
    value = found.value if found is not None and isinstance(found.value, dict) else {}
    try:
        return int(value.get("count") or 0)
    except ValueError:
        return 0


def broken_sentence(found: list[Invariant]) -> str:
    broken = [i for i in found if not i.held]
    if not broken:
        return ""
    return f"{broken[0].id} broke: {broken[0].text}"


def held_sentence(status: str, state: str | None, deps: int | None, entries: list[Entry]) -> str:
    """Said plainly when a finished run left the parent held: safe, yet never released."""
    if status != "done" or state != "awaiting_children":
        return ""
    if any(e.reply.startswith("1: the row retired") for e in entries):
        return (f"The parent is still held and nothing will release it: a late completion retired a child "
                f"that had already left active without counting it, so :dependencies stays at {deps} "
                "(the lost count dive 01 teaches).")
    return f"The parent is still held: the run ended with :dependencies = {deps}, children still outstanding."


def picture(moment: Moment) -> Picture:
    run = moment.kept("run") or {}
    choices = _choices(run.get("choices"))
    view = moment.first
    state = view.fields(PARENT).get("state")
    status = str(run.get("status") or "ready")
    found = invariants(moment, choices.children) if status == "done" else []
    entries = timeline(moment)
    return Picture(
        seed=choices.seed, status=status, recorded=bool(run.get("recorded")), ended=str(run.get("ended") or ""),
        choices=choices,
        script="complete_early_release" if choices.early_release else "complete",
        parent={"awaiting_children": "held", "pending": "released", "active": "released and claimed",
                None: "gone"}.get(state, state or "gone"),
        dependencies=view.number(PARENT, ":dependencies"), processed=len(view.fields(PARENT, ":processed")),
        timeline=entries, invariants=found, broken=broken_sentence(found),
        held=held_sentence(status, state, view.number(PARENT, ":dependencies"), entries))


def _choices(raw: Any) -> Choices:
    try:
        return msgspec.convert(raw, Choices) if isinstance(raw, dict) else Choices()
    except msgspec.ValidationError:
        return Choices()


def readout(found: Picture) -> str:
    if found.status == "running":
        return f"Racing: {len(found.timeline)} answers so far; the parent is {found.parent}."
    if found.status != "done":
        return (f"A parent held on {found.choices.children} children in queue race: "
                "choose the workers and faults, then Run.")
    held = sum(i.held for i in found.invariants)
    said = (f"The run ended at {found.ended}: the parent is {found.parent}, :dependencies = {found.dependencies}; "
            f"{held} of {len(found.invariants)} invariants held.")
    recorded = "A recorded run (the tour's race, played when this sandbox first showed the page)."
    return " ".join(s for s in (recorded if found.recorded else "", said, found.broken, found.held) if s)
