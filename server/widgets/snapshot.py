"""The snapshot: everything a page draws of one widget, read from Valkey in one round
trip (keys, lab state, picture, readout, open questions, the tour's checklist).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from server.sandboxes import progress
from server.sandboxes.progress import WidgetProgress
from server.widgets import questions
from server.widgets.base import Widget
from server.widgets.questions import Question
from server.widgets.view import Moment


class Snapshot(msgspec.Struct, kw_only=True):
    widget: str
    ver: int  # the server's clock at the widget's last action: pages paint in ver order
    landed: bool
    key_count: int
    queues: list[dict[str, Any]]
    readout: str
    picture: dict[str, Any] | None
    problem: str | None  # a key of the wrong type: what it is, and Reset
    outcome: dict[str, Any] | None  # the last action's record (text, by whom, from which page)
    questions: list[dict[str, Any]]  # the questions open now (one per action), never their answers
    steps: list[dict[str, Any]]  # the tour's checklist: id, label, reached
    progress: WidgetProgress


@dataclass
class Catalog:
    widgets: dict[str, Widget]
    questions: dict[str, tuple[Question, ...]] = field(default_factory=dict)

    def asked(self, widget: Widget) -> tuple[Question, ...]:
        return self.questions.get(widget.name, ())

    def widget_of_queue(self, queue: str) -> str | None:
        """The widget owning a sandbox queue `<sandbox>.<part>` (None: no widget's)."""
        return self._by_part.get(queue.partition(".")[2])

    @functools.cached_property
    def _by_part(self) -> dict[str, str]:
        return {p: w.name for w in self.widgets.values() for p in w.queue_parts}


def compose(catalog: Catalog, widget: Widget, moment: Moment, fields: Mapping[str, str]) -> Snapshot:
    """The snapshot of one moment, with the sandbox's progress record's `fields`."""
    problem = moment.misfit()
    described = widget.describe(moment) if problem is None and moment.landed else None
    asked = questions.offered(widget, catalog.asked(widget), moment) if problem is None and moment.landed else []
    record = progress.of_widget(fields, widget.name, [s.id for s in widget.tour])
    prefix = moment.first.queue.partition(".")[0] + "." if moment.views else ""
    # names and values as the learner writes them: no sandbox prefix, a row's parent_queue included
    queues, readout, picture, outcome = unsandboxed(
        ([v.as_json() for v in moment.views.values()], described.readout if described else "",
         described.picture if described else None, moment.kept("outcome")), prefix)
    return Snapshot(
        widget=widget.name,
        ver=int(moment.state.get("ver") or 0),
        landed=moment.landed,
        key_count=sum(v.count for v in moment.views.values()),
        queues=queues,
        readout=readout,
        picture=picture,
        problem=problem,
        outcome=outcome,
        questions=[q.as_json() for q in asked],
        steps=[{"id": s.id, "label": s.label, "reached": s.id in record.reached} for s in widget.tour],
        progress=record,
    )


T = TypeVar("T")


def unsandboxed(value: T, prefix: str) -> T:
    """`value` (JSON's types) with every `<sandbox>.` inside its strings removed: a page never
    shows the sandbox id (a class member would learn the target of an attack). Done on the
    encoded bytes, where the id (letters, digits and a dot) reads as it does in the strings:
    one pass in C rather than a walk of every string in Python (a fifth of a snapshot's cost)."""
    if not prefix:
        return value
    raw = msgspec.json.encode(value).replace(prefix.encode(), b"")
    return msgspec.json.decode(raw)  # type: ignore[no-any-return]
