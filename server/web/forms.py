"""Small helpers for the instructor and room endpoints: one body reader for
HTML forms and JSON alike, and the choice between a JSON answer and a
redirect (forms work without JavaScript: POST, then 303 to a page)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from starlette.requests import Request

from server.settings import truth
from server.web import body

FORM_MAX_BYTES = 4096


def wants_json(request: Request) -> bool:
    """JSON callers (fetch, curl, tests) get JSON; browsers posting a form get pages."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


async def read_fields(request: Request) -> dict[str, Any]:
    """The fields of a urlencoded form or a JSON object (400/413 otherwise)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "application/json":
        return await body.read_json(request, FORM_MAX_BYTES)
    raw = await body.read_raw(request, FORM_MAX_BYTES, f"the form is larger than {FORM_MAX_BYTES} bytes")
    if not raw.strip():
        return {}
    if ctype not in ("application/x-www-form-urlencoded", ""):
        raise body.BadBody("send a form (application/x-www-form-urlencoded) or a JSON object")
    try:
        text = raw.decode("utf-8")
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=False, max_num_fields=20)
    except (UnicodeDecodeError, ValueError) as exc:
        raise body.BadBody(f"the form cannot be read: {exc}") from exc
    return dict(pairs)


def as_flag(value: Any, name: str) -> bool:
    """true/false, on/off, 1/0 -> bool; BadBody otherwise."""
    if isinstance(value, bool):
        return value
    said = truth(value) if isinstance(value, str) else None
    if said is not None:
        return said
    raise body.BadBody(f"'{name}' must be true or false (on/off)")
