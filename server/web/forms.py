"""Bodies of the instructor's and the room's endpoints: an HTML form or JSON, one typed Struct.

The pages post plain HTML forms (they work without JavaScript); scripts and
tests post JSON. Both are decoded into the endpoint's own `msgspec.Struct`:
a form's text fields are converted as msgspec reads strings ("true" is a
bool, "3" an int), unknown fields are refused, and a body that does not fit
answers 400 naming the field (bodies.BadBody), before anything is written.
"""

from __future__ import annotations

from typing import TypeVar
from urllib.parse import parse_qsl

import msgspec
from starlette.requests import Request

from server.web import bodies
from server.web.bodies import BadBody

T = TypeVar("T")
FORM = "application/x-www-form-urlencoded"

__all__ = ["BadBody", "read", "wants_json"]


def wants_json(request: Request) -> bool:
    """A script's call (it sent JSON, or asks for it) rather than a page's form."""
    kind = request.headers.get("content-type", "")
    return kind.startswith("application/json") or "application/json" in request.headers.get("accept", "")


async def read(request: Request, kind: type[T]) -> T:
    """The body as `kind`: JSON (empty means {}), or a urlencoded form."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    data = await bodies.raw(request, request.app.state.settings.max_body_bytes)
    if content_type != FORM:
        if data and content_type not in ("", "application/json"):
            raise BadBody(415, "send the body as JSON or as an HTML form (application/x-www-form-urlencoded)")
        return bodies.decode(data, kind)
    try:
        fields = dict(parse_qsl(data.decode("utf-8"), keep_blank_values=True, strict_parsing=False))
    except UnicodeDecodeError as exc:
        raise BadBody(400, "the form is not UTF-8 text") from exc
    try:
        return msgspec.convert(fields, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise BadBody(400, f"the form does not fit this action: {exc}") from exc
