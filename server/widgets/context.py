"""One widget acting in one sandbox: the connection, who acts, and what the
action's first round trip already read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from server.emq.wire import Conn
from server.sandboxes.sandbox import queue_name
from server.widgets.snapshot import QueueView

if TYPE_CHECKING:
    from server.web.entry import WayIn
    from server.widgets.closing import Closing


@dataclass
class Context:
    """One widget acting in one sandbox."""

    conn: Conn
    sandbox: str
    # Who acts ("learner" or "instructor") and from which page (a tab id the
    # page makes up): the outcome says so on every page that shows it.
    by: str = "learner"
    tab: str = ""
    # The way in's scripts (admission's activity record and rate budgets,
    # `server/web/entry.py`), sent in the same round trip as the lock.
    way_in: WayIn | None = None
    # Plain writes to send in front of the first read (a page's read of the
    # widget: the sandbox's activity record), their replies not read.
    before: list[tuple[Any, ...]] = field(default_factory=list)
    # Commands an action leaves for its last round trip, sent with the outcome
    # and before the snapshot is read: the best-effort DEL of a completed
    # job's :logs, and the parent_policy HSETs of a flow a Reset just landed.
    tail: list[tuple[Any, ...]] = field(default_factory=list)
    # While a Reset that ends its action lands the scenario: `tail`, where the
    # land may leave its trailing writes (nothing reads the rows before the
    # finish). None otherwise: the land sends them itself.
    land_tail: list[tuple[Any, ...]] | None = None
    # Open while the action may leave writes for its closing round trip
    # (`server/widgets/closing.py`); None wherever the keys are read before it.
    closing: Closing | None = None
    # The Reset's lock removed the widget's keys and wrote its lab hash anew
    # (one queue: the same script call), so `Widget.reset` only lands.
    cleared: bool = False
    # The learner's progress fields for this widget, when the way in read them
    # already; None: the action reads them itself.
    held: list[Any] | None = None
    # The widget's first queue and its lab state as the lock found them: an
    # action reads them from here instead of asking Valkey again.
    start: QueueView | None = None
    start_state: dict[str, str] | None = None
    start_of: str = ""  # whose lab hash `start_state` is (its key)

    def started(self, state_key: str) -> dict[str, str] | None:
        """The lab hash the lock read, if it is this widget's and still fresh."""
        return self.start_state if self.start_of == state_key else None

    def take_start(self) -> QueueView | None:
        """The keys as the action's lock found them, once (the action's own
        writes make them stale)."""
        view, self.start = self.start, None
        return view

    def queue(self, *parts: str) -> str:
        return queue_name(self.sandbox, *parts)
