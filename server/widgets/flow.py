"""One reading of a flow, shared by every widget's picture and readout, so two
widgets never word the same keys differently.

A retired child has no row (`complete` deletes it): a card says where its
signal went (`:processed`, `:ignored`, an outbox entry), never "completed".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import msgspec

from server.emq import pump
from server.widgets.view import QueueView

Counted = Literal["processed", "ignored"]
EntryState = Literal["waiting", "applied"]
Card = TypeVar("Card", bound=msgspec.Struct)


class ChildCard(msgspec.Struct, kw_only=True):
    """A child as a picture draws it; a widget's own card subclasses it with its fields."""

    id: str
    state: str | None  # the row's state; None: no row
    set: str | None  # the state set holding it, if any
    counted: Counted | None  # where the parent recorded it, if it did
    entry: EntryState | None  # its outbox entry, for a cross-queue child
    where: str  # all of the above in words (`where`)


class ParentCard(msgspec.Struct, kw_only=True):
    """A flow's parent as a picture draws it; a widget's own card subclasses it with its fields."""

    id: str
    queue: str
    state: str | None
    sets: list[str]
    dependencies: int | None
    processed: dict[str, str] | list[str]  # the outbox lists its ids, sorted
    ignored: dict[str, str]

    def fate(self) -> str:
        return fate(self.state, self.sets)


def card(kind: type[Card], found: msgspec.Struct, **extra: Any) -> Card:
    """`found` (a ChildCard or a ParentCard) as `kind`, a widget's own card, `extra` its own fields or overrides."""
    return kind(**{**msgspec.structs.asdict(found), **extra})


def trusted_by(sandbox: str) -> pump.Accept:
    """The site's one rule for an outbox entry a learner could have written: its
    parent queue is one of this sandbox's, else it is poison (every widget's Pump passes this)."""
    prefix = sandbox + "."
    return lambda entry: entry.parent_queue.startswith(prefix)


def spec(parent: str, payload: str, children: Sequence[str], child_payload: str, **flags: bool) -> dict[str, Any]:
    """A flow's spec for `flows.add`: each child's payload is `child_payload` with its number as `{i}`."""
    return {"parent": {"id": parent, "payload": payload},
            "children": [{"id": c, "payload": child_payload.format(i=i), **flags} for i, c in enumerate(children, 1)]}


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 entry`, `2 entries`: every count a sentence shows goes through here."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def where(state: str | None, set_: str | None, counted: Counted | None, entry: EntryState | None) -> str:
    """Where a child is, in words: its row, else where its signal went."""
    if state is not None:
        return f"{state}, in {set_ or 'no state set'}"
    if counted == "processed":
        return "no row (retired); counted in the parent's :processed"
    if counted == "ignored":
        return "no row; its failure recorded in the parent's :ignored"
    if entry == "waiting":
        return "no row (retired); its completion waits in the outbox"
    return "no row"


def fate(state: str | None, sets: list[str]) -> str:
    """What a flow's parent is doing, in the words every readout uses."""
    where = ", ".join(sets) or "no set"
    if state == "failed":
        return f"the parent is failed (state failed, in {where}): nothing will release it"
    if state == "awaiting_children":
        return "the parent stays held (awaiting_children), in no state set"
    if state in (None, "gone"):
        return "no parent row: press Reset to land the flow again"
    return f"the parent is released: state {state}, in {where}"


@dataclass(frozen=True)
class FlowReading:
    parent: ParentCard
    children: list[ChildCard]

    def counted(self) -> int:
        return len(self.parent.processed) + len(self.parent.ignored)

    def tally(self) -> str:
        """`2 of 3 children complete` (with the ignored ones, when any)."""
        ignored = len(self.parent.ignored)
        said = f"{len(self.parent.processed)} of {len(self.children)} children complete"
        return said + (f", {ignored} ignored" if ignored else "")

    def counter(self) -> str:
        deps = self.parent.dependencies
        return f":dependencies = {'—' if deps is None else deps}"


def read_flow(parent_view: QueueView, parent_id: str,
              children: Sequence[tuple[QueueView, str]]) -> FlowReading:
    """The flow whose parent is `parent_id` on `parent_view`'s queue, with
    `children` as (the view of the child's queue, child id)."""
    processed = parent_view.fields(parent_id, ":processed")
    ignored = parent_view.fields(parent_id, ":ignored")
    parent = ParentCard(id=parent_id, queue=parent_view.queue, state=_state(parent_view, parent_id),
                        sets=parent_view.sets_of(parent_id), processed=processed, ignored=ignored,
                        dependencies=parent_view.number(parent_id, ":dependencies"))
    # the children whose entries sit in each child queue's outbox (a poison entry names none)
    outboxes = {v.queue: {e.child for e in map(pump.decoded, v.items("flow:outbox")) if e}
                for v, _ in children if v.queue != parent_view.queue}
    kids = []
    for view, cid in children:
        state, in_set = _state(view, cid), next(iter(view.sets_of(cid)), None)
        counted: Counted | None = "processed" if cid in processed else "ignored" if cid in ignored else None
        entry: EntryState | None = "waiting" if counted is None and cid in outboxes.get(view.queue, ()) else None
        kids.append(ChildCard(id=cid, state=state, set=in_set, counted=counted, entry=entry,
                              where=where(state, in_set, counted, entry)))
    return FlowReading(parent=parent, children=kids)


def _state(view: QueueView, job_id: str) -> str | None:
    """The row's state ("no state" when it names none); None: no row."""
    return (view.fields(job_id).get("state") or "no state") if view.row(job_id) is not None else None
