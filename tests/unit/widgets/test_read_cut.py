"""The read's cut of a long value is one number: read.lua cuts a string, or an element of a
collection, to CUT bytes, and the Python that judges what was read (an outbox entry cut there is
"unread", not poison) knows it as view.CUT_BYTES."""

from __future__ import annotations

import re
from pathlib import Path

from server.widgets.view import CUT_BYTES

READ_LUA = Path(__file__).resolve().parents[3] / "server" / "widgets" / "scripts" / "read.lua"


def test_the_python_cut_is_read_luas_cut() -> None:
    found = re.search(r"^local CUT, ELEMENTS, MAX_KEYS = (\d+),", READ_LUA.read_text(), re.MULTILINE)
    assert found is not None and int(found.group(1)) == CUT_BYTES
