"""Every widget a dive can place, by the name its directive uses."""

from __future__ import annotations

from server.widgets.base import Widget
from server.widgets.enqueue_stepper import EnqueueStepper
from server.widgets.failure_policy import FailurePolicy
from server.widgets.fanin import FanIn
from server.widgets.ledger import Ledger
from server.widgets.native import Native
from server.widgets.outbox import Outbox
from server.widgets.questions import QUESTIONS
from server.widgets.results_reader import ResultsReader
from server.widgets.tree import Tree

WIDGETS: dict[str, Widget] = {
    w.name: w
    for w in (EnqueueStepper(), FanIn(), Native(), Outbox(), FailurePolicy(), Ledger(), ResultsReader(), Tree())
}
for _name, _asked in QUESTIONS.items():
    WIDGETS[_name].questions = _asked  # each widget's questions, as server/widgets/questions.py sets them


def widget_for_queue(queue: str) -> str | None:
    """The widget that owns a queue name `<sandbox>.<part>[.<part>]`."""
    _, _, rest = queue.partition(".")
    for widget in WIDGETS.values():
        if any(rest == ".".join(parts) for parts in widget.queue_parts):
            return widget.name
    return None
