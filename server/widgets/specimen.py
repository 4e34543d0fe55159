"""The specimen: each widget's opening scenario in a sandbox the site owns, read for a
visitor whose own sandbox is not live yet.

A page visit without a cookie (a first visit, a crawler, a flood's client) registers
no sandbox (docs/LIMITS.md). Its first paint, and the page without JavaScript, still
show every widget as Valkey holds it: drawn from the specimen, read at that moment.
The drawing carries `ver` 0, below every `ver` a finish writes (the server's clock),
so the first frame of the visitor's own sandbox always replaces it (lab.js `swap`);
the visitor's sandbox lands when their stream opens or they act, as before.

The specimen is landed by the same first showing as any sandbox (`runner.show`, under
the widget's lock) but through no admission: it is not registered, so the reaper and
the resets never walk it, and no eviction counts it. Its keys gone (FLUSHALL, a
Valkey restarted without its data), the next read lands it again. Nothing acts on
it: actions and the console name only a visitor's sandbox (`SANDBOX_RE`), and no
ACL user covers its keys.
"""

from __future__ import annotations

import msgspec

from server.sandboxes.sandbox import SPECIMEN
from server.widgets import runner
from server.widgets.base import Widget
from server.widgets.snapshot import Snapshot
from server.widgets.turn import Actor

# Nobody's record moves: a first showing writes only the widget's lab state.
OWNER = Actor(SPECIMEN, SPECIMEN, records=False)
VER = 0  # below any `ver` finish.lua writes: every frame of the visitor's own replaces it


async def snapshot(lab: runner.Lab, widget: Widget) -> Snapshot:
    """The widget's opening scenario as the specimen holds it now (landed the first time,
    and again after its keys went), marked as no sandbox's state (`ver` 0)."""
    found = await runner.show(lab, widget, OWNER)
    return msgspec.structs.replace(found, ver=VER)
