"""The snapshot: everything a page draws of one widget, read from Valkey in one round
trip (keys, lab state, picture, readout, open questions, the tour's checklist).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

import msgspec

from server.sandboxes import progress
from server.sandboxes.progress import WidgetProgress
from server.widgets import questions
from server.widgets.base import Description, Widget
from server.widgets.questions import Asked, Question, Verdict
from server.widgets.view import Moment, QueueShape


class Record(msgspec.Struct, kw_only=True):
    """The last action's record as the lab state keeps it (`runner.act`): what, which
    button, who, from which page. Every field has a default: an older record still reads."""

    text: str = ""
    kind: Literal["ok", "refused", "info"] = "ok"
    detail: dict[str, object] = {}
    action: str = ""
    label: str = ""
    by: str = "learner"
    name: str = ""
    tab: str = ""
    reached: list[str] = []
    verdict: Verdict | None = None


class StepState(msgspec.Struct):
    """One milestone of the tour's checklist."""

    id: str
    label: str
    reached: bool


class Snapshot(msgspec.Struct, kw_only=True):
    widget: str
    ver: int  # the server's clock at the widget's last action: pages paint in ver order
    landed: bool
    key_count: int
    queues: list[QueueShape]
    readout: str
    picture: msgspec.Struct | None  # the widget's own picture (`Widget.describe`)
    problem: str | None  # a key of the wrong type: what it is, and Reset
    outcome: Record | None  # the last action's record (text, by whom, from which page)
    questions: list[Asked]  # the questions open now (one per action), never their answers
    steps: list[StepState]  # the tour's checklist
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
    fits = problem is None and moment.landed
    described = widget.describe(moment) if fits else Description("", None)
    asked = questions.offered(widget, catalog.asked(widget), moment) if fits else []
    record = progress.of_widget(fields, widget.name, [s.id for s in widget.tour])
    try:  # the last action's record: a half-written or older one must not break a picture
        outcome = msgspec.convert(kept, Record) if (kept := moment.kept("outcome")) is not None else None
    except msgspec.ValidationError:
        outcome = None
    snap = Snapshot(
        widget=widget.name,
        ver=int(moment.state.get("ver") or 0),
        landed=moment.landed,
        key_count=sum(v.count for v in moment.views.values()),
        queues=[v.as_json() for v in moment.views.values()],
        readout=described.readout,
        picture=described.picture,
        problem=problem,
        outcome=outcome,
        questions=[q.as_json() for q in asked],
        steps=[StepState(s.id, s.label, s.id in record.reached) for s in widget.tour],
        progress=record,
    )
    # Names and values as the learner writes them: every `<sandbox>.` inside the strings removed (a row's
    # parent_queue included). A page never shows the sandbox id: a class member would learn the target of
    # an attack. Done on the encoded bytes (the id reads there as in the strings): one pass in C.
    prefix = moment.first.queue.partition(".")[0] + "."
    raw = msgspec.json.encode(snap).replace(prefix.encode(), b"")
    return msgspec.json.decode(raw, type=_shape(type(snap.picture) if snap.picture is not None else None))


@functools.cache
def _shape(picture: type[msgspec.Struct] | None) -> type[Snapshot]:
    """`Snapshot` typed with the widget's own picture Struct; one subclass per picture type."""
    if picture is None:
        return Snapshot
    made = msgspec.defstruct(f"Snapshot{picture.__name__}", [("picture", picture | None)], bases=(Snapshot,),
                             kw_only=True)
    return cast(type[Snapshot], made)
