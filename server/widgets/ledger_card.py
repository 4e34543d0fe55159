"""One flow of the ledger's batch as its picture draws it: what the add returned for it,
beside what Valkey holds for its parent and children now.
"""

from __future__ import annotations

import msgspec

from server.widgets import flow
from server.widgets.base import FATES
from server.widgets.ledger_batch import Planned, well_formed
from server.widgets.view import QueueView


class LedgerChild(msgspec.Struct, kw_only=True):
    """A child of a flow; an ill-formed batch's child never became a key, so it has no
    `counted` nor `entry` (UNSET: the JSON leaves them out, as it always did)."""

    id: str
    queue: str  # the child's queue, relative to the ledger ("orders")
    state: str | None
    set: str | None
    where: str
    counted: flow.Counted | msgspec.UnsetType | None = msgspec.UNSET
    entry: flow.EntryState | msgspec.UnsetType | None = msgspec.UNSET


class FlowCard(msgspec.Struct, kw_only=True):
    number: int
    parent: str
    path: str  # same-queue or cross-queue
    entry: list[object] | None  # its [parent, [children]] in the add's result
    tried: bool
    error: str | None
    state: str | None
    dependencies: int | None
    processed: int
    sets: list[str]
    children: list[LedgerChild]
    word: str = ""  # the parent in one word
    line: str = ""  # the flow in one sentence


def card(n: int, plan: Planned, views: dict[str, QueueView], entry: list[object] | None,
         tried: bool, error: str | None) -> FlowCard:
    """One flow as Valkey holds it now, beside what the add returned for it."""
    status = FlowCard(number=n, parent=plan.parent, path=plan.path, entry=entry, tried=tried, error=error,
                      state=None, dependencies=None, processed=0, sets=[], children=[])
    if all(well_formed(i) for i in (plan.parent, *(c for c, _ in plan.children))):
        found = flow.read_flow(views["orders"], plan.parent, [(views[q], c) for c, q in plan.children])
        p = found.parent
        status.state, status.dependencies, status.processed, status.sets = (
            p.state, p.dependencies, len(p.processed), p.sets)
        status.children = [LedgerChild(**c.card_fields(), queue=rel)
                           for c, (_, rel) in zip(found.children, plan.children)]
    else:
        # an ill-formed id never became a key: the gate refused the batch it was in
        status.children = [LedgerChild(id=c, queue=q, state=None, set=None,
                                       where="no row" if well_formed(c) else "ill-formed: no key can be built for it")
                           for c, q in plan.children]
    status.word = parent_word(status)
    status.line = card_line(status)
    return status


def parent_word(s: FlowCard) -> str:
    if s.state is None:
        return "no row" if s.tried else "not added yet"
    return FATES.get(s.state, str(s.state))


def card_line(s: FlowCard) -> str:
    if s.entry:
        kids = s.entry[1] if len(s.entry) > 1 and isinstance(s.entry[1], list) else []
        found = f"in the result as ({s.entry[0]}, [{', '.join(map(str, kids))}])"
    elif not s.tried:
        found = "not added yet"
    else:
        found = "not in the result" + (f" (refused: {s.error})" if s.error else "")
    if s.state is None:
        parent = f"parent {s.parent}: no row"
    else:
        deps = "no :dependencies" if s.dependencies is None else f":dependencies = {s.dependencies}"
        where = f"in {', '.join(s.sets)}" if s.sets else "in no state set"
        parent = f"parent {s.parent}: {s.state}, {deps}, {where}"
    kids_said = "; ".join(f"{c.id} (ledger.{c.queue}) {c.where}" for c in s.children)
    return f"Flow {s.number} ({s.path}) is {found}; {parent}; children: {kids_said}."
