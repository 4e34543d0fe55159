"""The site's JSON, encoded once and fast: every JSON answer and stream frame.

An action's answer carries the widget's whole snapshot (some 3 kB), and the
stream encodes the same snapshot once per sandbox per change. The standard
library's encoder was measured at an eighth of a click's instructions for
that one answer; orjson (in C, UTF-8 out) does it in a fraction of that.
What it writes is the same JSON Starlette's `JSONResponse` wrote (compact,
UTF-8, no NaN: orjson writes null where `json` refused).
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import JSONResponse

# Widget state never has non-string keys, but a count keyed by number (a
# reading, a roster tally) must encode as `json` encodes it: the key as text.
_OPTIONS = orjson.OPT_NON_STR_KEYS


def dumps(data: Any) -> str:
    """`data` as JSON text (an SSE frame's data)."""
    return orjson.dumps(data, option=_OPTIONS).decode()


class JSONAnswer(JSONResponse):
    """Starlette's `JSONResponse`, its body encoded by orjson."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content, option=_OPTIONS)
