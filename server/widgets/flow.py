"""One reading of a flow, shared by every widget's picture and readout.

A flow's truth is spread over several keys: the parent's row, its
`:dependencies`, `:processed` and `:ignored`, the state sets, each child's
row and, for a cross-queue flow, the entries waiting in the children's
outboxes. `read_flow` reads them once from the views a snapshot just read,
and `FlowReading` words them once, so no widget re-reads or re-words a flow
its own way (and two widgets never disagree about the same keys).

A retired child has no row: `complete` deletes it. What Valkey still holds of
it is where its signal went — counted in the parent's `:processed` or
`:ignored`, or an outbox entry — and that is what a card says, never
"completed" for a row that is not there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from server.emq import pump
from server.widgets.view import QueueView

Counted = Literal["processed", "ignored"]
EntryState = Literal["waiting", "applied"]


def trusted_by(sandbox: str) -> pump.Accept:
    """The site's one rule for an outbox entry a learner could have written:
    its parent queue is one of this sandbox's, else the Pump treats it as
    poison and never delivers it (every Pump a widget runs passes this)."""
    prefix = sandbox + "."
    return lambda entry: entry.parent_queue.startswith(prefix)


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 entry`, `2 entries`: every count a sentence shows goes through here."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


@dataclass(frozen=True)
class Entry:
    """One raw item of an outbox (or its poison list), decoded."""

    raw: str
    child: str | None  # None: poison, it does not decode
    kind: str | None
    parent: str | None
    # An entry whose child the parent already counted was delivered and not
    # yet trimmed (a Pump that crashed before its trim): "applied".
    state: EntryState | None

    @property
    def poison(self) -> bool:
        return self.child is None

    def words(self) -> str:
        if self.child is None:
            return f"poison: {self.raw[:60]}{'…' if len(self.raw) > 60 else ''}"
        tail = ", delivered, not yet trimmed" if self.state == "applied" else ", waiting for the Pump"
        return f"{self.kind} {self.child} → {self.parent}{tail}"

    def as_json(self) -> dict[str, Any]:
        return {"text": self.words(), "poison": self.poison, "child": self.child, "state": self.state}


@dataclass(frozen=True)
class Child:
    """A flow child as Valkey holds it now."""

    id: str
    queue: str
    state: str | None  # the row's state; None: no row
    set: str | None  # the state set holding it, if any
    counted: Counted | None  # where the parent recorded it, if it did
    entry: EntryState | None  # its outbox entry, for a cross-queue child

    def words(self) -> str:
        if self.state is not None:
            return f"{self.state}, in {self.set or 'no state set'}"
        if self.counted == "processed":
            return "no row (retired); counted in the parent's :processed"
        if self.counted == "ignored":
            return "no row; its failure recorded in the parent's :ignored"
        if self.entry == "waiting":
            return "no row (retired); its completion waits in the outbox"
        return "no row"

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.state, "set": self.set,
                "counted": self.counted, "entry": self.entry, "where": self.words()}


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
class Parent:
    id: str
    queue: str
    state: str | None
    sets: list[str]
    dependencies: int | None
    processed: dict[str, str]
    ignored: dict[str, str]
    fields: dict[str, str] = field(default_factory=dict)

    def fate(self) -> str:
        return fate(self.state, self.sets)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "queue": self.queue, "state": self.state, "sets": self.sets,
                "dependencies": self.dependencies, "processed": self.processed, "ignored": self.ignored,
                "done": len(self.processed), "in_pending": "pending" in self.sets}


@dataclass(frozen=True)
class FlowReading:
    parent: Parent
    children: list[Child]
    outboxes: dict[str, list[Entry]]  # queue -> its flow:outbox, head first
    poison: dict[str, list[Entry]]  # queue -> its flow:outbox:poison

    def counted(self) -> int:
        return len(self.parent.processed) + len(self.parent.ignored)

    def entries(self, state: EntryState) -> int:
        return sum(e.state == state for q in self.outboxes.values() for e in q)

    def blocking(self) -> int:
        return sum(e.poison for q in self.outboxes.values() for e in q)

    def aside(self) -> int:
        return sum(len(q) for q in self.poison.values())

    def tally(self) -> str:
        """`2 of 3 children complete` (with the ignored ones, when any)."""
        done, ignored = len(self.parent.processed), len(self.parent.ignored)
        total = len(self.children)
        said = f"{done} of {total} children complete"
        return said + (f", {ignored} ignored" if ignored else "")

    def counter(self) -> str:
        deps = self.parent.dependencies
        return f":dependencies = {'—' if deps is None else deps}"


def decode_entries(raw: Sequence[str], counted: set[str]) -> list[Entry]:
    found = []
    for item in raw:
        try:
            e = pump.decode_entry(item)
        except pump.PoisonEntry:
            found.append(Entry(raw=item, child=None, kind=None, parent=None, state=None))
            continue
        found.append(Entry(raw=item, child=e.child, kind=e.kind, parent=e.parent,
                           state="applied" if e.child in counted else "waiting"))
    return found


def read_flow(parent_view: QueueView, parent_id: str,
              children: Sequence[tuple[QueueView, str]]) -> FlowReading:
    """The flow whose parent is `parent_id` on `parent_view`'s queue, with
    `children` as (the view of the child's queue, child id)."""
    row = parent_view.fields(parent_id)
    processed = parent_view.fields(parent_id, ":processed")
    ignored = parent_view.fields(parent_id, ":ignored")
    parent = Parent(
        id=parent_id, queue=parent_view.queue,
        state=(row.get("state") or "no state") if parent_view.row(parent_id) is not None else None,
        sets=parent_view.sets_of(parent_id),
        dependencies=parent_view.number(parent_id, ":dependencies"),
        processed=processed, ignored=ignored, fields=row,
    )
    counted = set(processed) | set(ignored)
    outboxes: dict[str, list[Entry]] = {}
    poison: dict[str, list[Entry]] = {}
    for view, _ in children:
        if view.queue != parent_view.queue and view.queue not in outboxes:
            outboxes[view.queue] = decode_entries(view.items("flow:outbox"), counted)
            poison[view.queue] = decode_entries(view.items("flow:outbox:poison"), counted)
    kids = []
    for view, cid in children:
        crow = view.fields(cid)
        waiting = any(e.child == cid and e.state == "waiting" for e in outboxes.get(view.queue, []))
        kids.append(Child(
            id=cid, queue=view.queue,
            state=(crow.get("state") or "no state") if view.row(cid) is not None else None,
            set=next(iter(view.sets_of(cid)), None),
            counted="processed" if cid in processed else "ignored" if cid in ignored else None,
            entry="waiting" if waiting else None,
        ))
    return FlowReading(parent=parent, children=kids, outboxes=outboxes, poison=poison)
