"""The stream's frames: a widget read (`reader.snapshot`) and drawn (`draw.Drawing`)
as one SSE event of HTML, the same bytes for every page of the sandbox.

A drawing is encoded once: every stream that sends it (a change's broadcast, a thousand
pages' first frames of one snapshot) sends the one bytes object, so what a stream holds
between two frames is shared, not a copy of its own.

The last step's writes are kept per sandbox and widget until a later step writes,
so a page that opens (or reconnects) after it marks the same keys as those live.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Sequence

from server.live.streams import Worded, html_frame
from server.widgets import reader
from server.widgets.draw import Drawing
from server.widgets.runner import Lab
from server.widgets.snapshot import Snapshot

EVENT = "widget"  # the SSE event a widget's HTML comes in
KEPT = 10_000  # (sandbox, widget) pairs whose last step is remembered: the least recent go first
ENCODED = 64  # encoded frames kept by their drawing, the least recently sent dropped first
LOGGED = 40  # writes one step's effects log shows at most


class Frames:
    """The hub's painter (`server.live.streams.Painter`): read, then draw."""

    def __init__(self, lab: Lab, drawing: Drawing) -> None:
        self.lab, self.drawing = lab, drawing
        self.last: OrderedDict[tuple[str, str], tuple[Worded, ...]] = OrderedDict()
        # by the drawing (Drawing hands the same str for the same data: its hash is cached, so is the lookup)
        self.encoded = functools.lru_cache(maxsize=ENCODED)(functools.partial(html_frame, EVENT))

    def html(self, sandbox: str, widget: str, snap: Snapshot | None, new: Sequence[Worded] = ()) -> str:
        """The widget drawn, its last step's writes marked (`new`: a step's writes just heard)."""
        pair = (sandbox, widget)
        writes = tuple(e for e in new if e.key.startswith("emq:"))[-LOGGED:]
        if writes:
            self.last[pair] = writes
            self.last.move_to_end(pair)
            while len(self.last) > KEPT:
                self.last.popitem(last=False)
        return self.drawing.html(self.lab.catalog.widgets[widget], snap, self.last.get(pair, ()))

    def event(self, sandbox: str, widget: str, snap: Snapshot | None, new: Sequence[Worded] = ()) -> bytes:
        """The widget's SSE event (`html` as a frame): the same bytes object for the same drawing."""
        return self.encoded(self.html(sandbox, widget, snap, new))

    async def frame(self, sandbox: str, widget: str, effects: Sequence[Worded] = ()) -> bytes:
        """The widget's frame, or nothing (b"") while its scenario is half-landed."""
        found = self.lab.catalog.widgets[widget]
        moment, snap = await reader.snapshot(self.lab.conn, self.lab.catalog, found, sandbox, self.lab.snapshot_bytes)
        if not moment.landed:
            # A landing writes under the lock and sets `landed` only with its finish: its writes
            # notify half a scenario. The finish's own notification draws it whole.
            return b""
        return self.event(sandbox, widget, snap, effects)
