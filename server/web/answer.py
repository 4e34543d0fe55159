"""The site's JSON answers: msgspec encodes them (typed structs and plain data alike)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from starlette.responses import Response

dumps: Callable[[Any], bytes] = msgspec.json.Encoder().encode


class JSONAnswer(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
