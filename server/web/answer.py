"""The site's JSON answers: msgspec encodes them (typed structs and plain data alike)."""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.responses import Response

_encoder = msgspec.json.Encoder()


def dumps(data: Any) -> bytes:
    return _encoder.encode(data)


class JSONAnswer(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)
