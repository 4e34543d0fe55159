"""The specimen: each widget's opening scenario in a sandbox the site owns, drawn for a
visitor whose own sandbox is not live yet (no cookie registers none: docs/LIMITS.md).

It lands by the same first showing as any sandbox (`runner.show`) but through no
admission: never registered, so no reaper, reset or eviction walks it; its keys gone,
the next read lands it again. Nothing acts on it: actions and the console name only a
visitor's sandbox (`SANDBOX_RE`), and no ACL user covers its keys.
"""

from __future__ import annotations

import msgspec

from server.sandboxes.sandbox import SPECIMEN
from server.widgets.snapshot import Snapshot
from server.widgets.turn import Actor

# Nobody's record moves: a first showing writes only the widget's lab state.
OWNER = Actor(SPECIMEN, SPECIMEN, records=False)
VER = 0  # below any `ver` finish.lua writes: the first frame of the visitor's own replaces it (lab.js `swap`)


def shown(snap: Snapshot) -> Snapshot:
    """A snapshot of the specimen (read as `OWNER`) as a page draws it: at `ver` 0."""
    return msgspec.structs.replace(snap, ver=VER)
