"""Request bodies: read up to a cap, then decoded into the endpoint's own `msgspec.Struct`.

Unknown fields are refused and a body that does not fit answers 400 naming the field, before anything
runs. The instructor's and the room's pages post HTML forms (no JavaScript needed), scripts JSON:
`read_form` takes both.
"""

from __future__ import annotations

import re
from typing import TypeVar
from urllib.parse import parse_qsl

import msgspec
from starlette.requests import Request

from server.web.guards import Refused
from server.web.services import services

T = TypeVar("T")
FORM = "application/x-www-form-urlencoded"


class BadBody(Refused, ValueError):
    """A body that cannot be this action's (400), or too large (413)."""


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


_PATH = re.compile(r" - at `\$((?:\.\w+|\[\d+\])*)`$")
_STEP = re.compile(r"\.(\w+)(?:\[(\d+)\])?|\[(\d+)\]")
_ONE = {"children": "child", "flows": "flow", "faults": "fault", "checks": "check"}


def in_words(exc: msgspec.ValidationError) -> str:
    """msgspec's complaint with its JSON path said as a reader would: `… - at `$.flows[0].children[1].id``
    becomes `… (flow 1, child 2, its id)`."""
    text = str(exc)
    found = _PATH.search(text)
    if not found:
        return text
    where = []
    for name, index, bare in _STEP.findall(found[1]):
        if name and index:
            where.append(f"{_ONE.get(name, name.rstrip('s') or name)} {int(index) + 1}")
        elif name:
            where.append(f"its {name}")
        else:
            where.append(f"item {int(bare) + 1}")
    return f"{text[: found.start()]} ({', '.join(where)})" if where else text[: found.start()]


def decode(data: bytes, kind: type[T]) -> T:
    """`data` (JSON; empty means {}) as `kind`, or BadBody(400) saying what is wrong."""
    try:
        return msgspec.json.decode(data or b"{}", type=kind)
    except msgspec.ValidationError as exc:
        raise BadBody(400, f"the body does not fit this action: {in_words(exc)}") from exc
    except msgspec.DecodeError as exc:
        raise BadBody(400, f"the body is not JSON: {exc}") from exc


async def read(request: Request, kind: type[T]) -> T:
    return decode(await raw(request, services(request).settings.max_body_bytes), kind)


def wants_json(request: Request) -> bool:
    """A script's call (it sent JSON, or asks for it) rather than a page's form."""
    kind = request.headers.get("content-type", "")
    return kind.startswith("application/json") or "application/json" in request.headers.get("accept", "")


async def read_form(request: Request, kind: type[T], cap: int | None = None) -> T:
    """The body as `kind`: JSON (empty means {}), or a urlencoded form read as msgspec reads strings.
    At most `cap` bytes (default `EMQLAB_MAX_BODY_BYTES`) are read, in memory: a multipart body is
    refused (415) before any of it is parsed or spooled to disk."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    data = await raw(request, services(request).settings.max_body_bytes if cap is None else cap)
    if content_type != FORM:
        if data and content_type not in ("", "application/json"):
            raise BadBody(415, "send the body as JSON or as an HTML form (application/x-www-form-urlencoded)")
        return decode(data, kind)
    try:
        fields = dict(parse_qsl(data.decode("utf-8"), keep_blank_values=True, strict_parsing=False))
    except UnicodeDecodeError as exc:
        raise BadBody(400, "the form is not UTF-8 text") from exc
    try:
        return msgspec.convert(fields, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise BadBody(400, f"the form does not fit this action: {in_words(exc)}") from exc
