"""Reading and checking an action's JSON body, before any widget sees it.

The widget actions validate their own fields; this is the floor under all of
them, applied to every body of every action:

* the body is read up to a byte cap (413 past it, without reading the rest);
* it is a JSON object, nested at most `MAX_DEPTH` deep, with at most
  `MAX_NODES` values;
* every object key is a well-formed name (the id alphabet: no braces, colons,
  glob characters, spaces or newlines);
* every value under an id-like key (`id`, `queue`, `parent`, `*_id`,
  `*_queue`, `ids`, `queues`) passes the id gate;
* no body names a sandbox (a `sandbox` field, or an id or queue that starts
  with a sandbox id, like `s0a1b2c3d4e.fanin`): the sandbox comes from the
  signed cookie only, and queues are named relative to it;
* every string is at most `max_payload_bytes` long (UTF-8).

A refusal raises `BadBody` (400) or `BodyTooLarge` (413) with a sentence.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import ClientDisconnect, Request

from server.emq.keyspace import ID_RE
from server.sandboxes.sandbox import SANDBOX_RE

MAX_DEPTH = 6
MAX_NODES = 2000
ID_KEYS = {"id", "ids", "queue", "queues", "parent", "parent_id", "child", "child_id", "job", "job_id"}
FORBIDDEN_KEYS = {"sandbox", "sandbox_id"}


class BadBody(ValueError):
    status = 400


class BodyTooLarge(BadBody):
    status = 413


class ClientGone(BadBody):
    """The client disconnected before its body arrived: its own doing, not a
    failure of the server (answered, though nobody reads the answer)."""


async def read_raw(request: Request, max_bytes: int, too_large: str) -> bytes:
    """The body, read up to `max_bytes` (BodyTooLarge past it, without reading on);
    a declared Content-Length past it is refused before a byte is read."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise BadBody("the Content-Length header is not a number")
        if int(declared) > max_bytes:
            raise BodyTooLarge(too_large)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise BodyTooLarge(too_large)
            chunks.append(chunk)
    except ClientDisconnect as exc:
        raise ClientGone("the client disconnected before its request body arrived") from exc
    return b"".join(chunks)


async def read_json(request: Request, max_bytes: int) -> dict[str, Any]:
    raw = await read_raw(request, max_bytes, f"the request body is larger than {max_bytes} bytes")
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except RecursionError as exc:
        raise BadBody("the body is nested too deeply") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadBody(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadBody("the body must be a JSON object")
    return body


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_id_key(key: str) -> bool:
    return key in ID_KEYS or key.endswith(("_id", "_queue", "_ids"))


def _show(value: str) -> str:
    text = value if len(value) <= 40 else value[:40] + "…"
    return json.dumps(text)


def check(body: dict[str, Any], max_payload_bytes: int) -> dict[str, Any]:
    """The body unchanged when it passes the floor; BadBody otherwise."""
    nodes = 0

    def walk(value: Any, depth: int, path: str, id_like: bool) -> None:
        nonlocal nodes
        nodes += 1
        if nodes > MAX_NODES:
            raise BadBody(f"the body holds more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise BadBody(f"the body is nested more than {MAX_DEPTH} deep")
        if isinstance(value, dict):
            for key, item in value.items():
                _check_field_name(key, path)
                walk(item, depth + 1, f"{path}.{key}" if path else key, _is_id_key(key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, depth + 1, f"{path}[{i}]", id_like)
        elif isinstance(value, str):
            _check_text(value, path, id_like, max_payload_bytes)
        elif isinstance(value, float) and not math.isfinite(value):
            raise BadBody(f"{path} is not a finite number")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
            raise BadBody(f"{path} is too large a number")

    walk(body, 0, "", False)
    return body


def _check_field_name(key: str, path: str) -> None:
    if not ID_RE.fullmatch(key):
        raise BadBody(
            f"the field name {_show(key)} at {path or 'the top'} is not allowed: "
            "1-128 characters of A-Z a-z 0-9 _ . -"
        )
    if key.lower() in FORBIDDEN_KEYS:
        raise BadBody(
            f"a request cannot name a {key}: your sandbox comes from your cookie, "
            "and every key is built by the server"
        )


def _check_text(value: str, path: str, id_like: bool, max_payload_bytes: int) -> None:
    if len(value.encode("utf-8", "surrogatepass")) > max_payload_bytes:
        raise BadBody(f"{path or 'a value'} is longer than {max_payload_bytes} bytes")
    if id_like and not ID_RE.fullmatch(value):
        raise BadBody(
            f"{path} = {_show(value)} is not a well-formed id or queue name: "
            "1-128 characters of A-Z a-z 0-9 _ . - (no braces, colons, globs, spaces or newlines)"
        )
    if id_like and SANDBOX_RE.match(value.split(".", 1)[0]):
        raise BadBody(
            f"{path} = {_show(value)} names a sandbox: your sandbox comes from your cookie, "
            "and queues are named relative to it"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadBody(f"{path or 'a value'} is not valid text") from exc
