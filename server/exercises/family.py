"""A flow the checks land (one parent, three children) and where its parent is.

``Family`` names every key of the flow for the pictures; ``expect_parent`` says, when the parent
is not where a check wants it, where Valkey holds it instead. ``claim`` and ``lapse`` are the
worker moves the scenarios need besides completing, by the course's own scripts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.emq import jobs, keyspace
from server.exercises.outcome import Picture
from server.exercises.scene import CheckFailed, Scene, expect_counter, expect_field, expect_reply
from server.exercises.watchdog import Erred, Replied

LEASE_MS = 30_000
SETS = ("pending", "active", "dead")


@dataclass(frozen=True)
class Family:
    """A parent in ``parent_queue`` with ``children`` in ``child_queue`` (the same queue or another)."""

    parent_queue: str
    child_queue: str
    parent: str
    children: tuple[str, ...]

    @property
    def parent_row(self) -> str:
        return keyspace.job_key(self.parent_queue, self.parent)

    @property
    def deps(self) -> str:
        return keyspace.dependencies_key(self.parent_queue, self.parent)

    @property
    def processed(self) -> str:
        return keyspace.processed_key(self.parent_queue, self.parent)

    @property
    def ignored(self) -> str:
        return keyspace.ignored_key(self.parent_queue, self.parent)

    def parent_set(self, name: str) -> str:
        return keyspace.queue_key(self.parent_queue, name)

    def keys(self) -> list[str]:
        """Every key a check of this flow may judge, parent's first."""
        found = [self.parent_row, self.deps, self.processed, self.ignored]
        found += [keyspace.queue_key(self.parent_queue, name) for name in SETS]
        if self.child_queue != self.parent_queue:
            found += [keyspace.queue_key(self.child_queue, name) for name in SETS]
            found.append(keyspace.outbox_key(self.child_queue))
        found += [keyspace.job_key(self.child_queue, child) for child in self.children]
        return found

    def spec(self, **per_child: dict[str, Any]) -> dict[str, Any]:
        """The flow as ``flows.add`` takes it; ``per_child`` adds fields to a named child."""
        children = []
        for number, child in enumerate(self.children, 1):
            entry: dict[str, Any] = {"id": child, "payload": f"part {number}"}
            if self.child_queue != self.parent_queue:
                entry["queue"] = self.child_queue
            entry.update(per_child.get(child, {}))
            children.append(entry)
        return {"parent": {"id": self.parent, "payload": "the whole"}, "children": children}


# Where a check may want the parent: its state, the state sets holding it, in words.
PARENT_AT = {
    "held": ("awaiting_children", (), "still held (awaiting_children, in no state set)"),
    "released": ("pending", ("pending",), "released (state pending, in pending)"),
    "claimed": ("active", ("active",), "to stay with the worker that claimed it (state active, in active only)"),
    "failed": ("failed", ("dead",), "failed (state failed, in dead)"),
}


def expect_parent(picture: Picture, family: Family, where: str, step: str) -> None:
    """The parent must be ``where`` (a ``PARENT_AT``); else the sentence says where Valkey holds it."""
    state, sets, words = PARENT_AT[where]
    got = picture.field(family.parent_row, "state")
    inside = tuple(name for name in SETS if picture.holds(family.parent_set(name), family.parent))
    if got == state and inside == sets:
        return
    sets_held = "in " + " and ".join(inside) if inside else "in no state set"
    held = f"the parent with state {got or '(none)'}, {sets_held}"
    if got is None and picture.find(family.parent_row) is None:
        held = "no parent row"
    raise CheckFailed(f"expected the parent {words}, Valkey holds {held} after {step}")


def expect_counted(outcome: Replied | Erred, after: Picture, family: Family, child: str, value: str,
                   left: int, step: str) -> None:
    """The learner's call counted ``child``: it answered 1, :dependencies is ``left``, ``value``
    is in :processed, and the parent stays held while any child is left."""
    expect_reply(outcome, 1, step)
    expect_counter(after, family.deps, left, step)
    expect_field(after, family.processed, ":processed", child, value, step)
    if left > 0:
        expect_parent(after, family, "held", step)


async def claim(scene: Scene, queue: str, want: str) -> int:
    """Claim with the course's script; the scenario needs ``want`` next. Its token."""
    got = await jobs.claim(scene.admin, queue, LEASE_MS)
    if got is None or got[0] != want:
        handed = "nothing" if got is None else got[0]
        raise CheckFailed(f"expected {want} to be claimable next, the course's claim handed out {handed}"
                          f"{scene.after_step}")
    return got[1]


async def lapse(scene: Scene, queue: str, job_id: str) -> None:
    """The job's lease runs out: its deadline is wound back, then the course's
    ``requeue_lapsed`` hands it back to pending (its token unchanged)."""
    await scene.admin.zadd(keyspace.queue_key(queue, "active"), {job_id: 1}, xx=True)
    await jobs.requeue_lapsed(scene.admin, queue)
