"""Request bodies: read up to a cap, then decoded into the action's own type.

Each action declares its body as a `msgspec.Struct` (`server/widgets/base.py`
`Body`): unknown fields are refused, sizes bounded, and a body that does not
fit answers 400 naming the field, before anything runs. An empty body is `{}`.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec
from starlette.requests import Request

T = TypeVar("T")


class BadBody(ValueError):
    """A body that cannot be this action's (400), or too large (413)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def raw(request: Request, cap: int) -> bytes:
    """The body's bytes, refused past `cap` without reading the rest."""
    declared = request.headers.get("content-length", "")
    if declared.isdecimal() and int(declared) > cap:
        raise BadBody(413, f"the body is larger than {cap} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise BadBody(413, f"the body is larger than {cap} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def decode(data: bytes, kind: type[T]) -> T:
    """`data` (JSON; empty means {}) as `kind`, or BadBody(400) saying what is wrong."""
    try:
        return msgspec.json.decode(data or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        raise BadBody(400, f"the body does not fit this action: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise BadBody(400, f"the body is not JSON: {exc}") from exc


async def read(request: Request, kind: type[T]) -> T:
    return decode(await raw(request, request.app.state.settings.max_body_bytes), kind)
