"""Front matter: a small, strict subset of YAML, parsed here (no new dependency).

The block sits between ``---`` lines at the top of a page (markdown-it's
``front_matter_plugin`` cuts it out). Its grammar, line by line:

    # a comment (only at the start of a line)
    key: some text            a scalar: the rest of the line, stripped
    key: "quoted text"        a JSON string, for text that starts with a
                              special character or needs exact spaces
    key: >                    a folded scalar: the indented lines below are
      one long paragraph        joined with single spaces
      written over lines
    key:                      a list: each item starts with "  - "
      - a plain item
      - title: Valkey — SET   an item may be a mapping: "- k: v", then more
        href: https://...       "k: v" lines indented under the first key
    key:                      a mapping: "  k: v" lines
      page: /flows/cross-queue

Keys are lower-case words (``a-z``, digits, ``_``). Indentation is two
spaces per level. Everything is a string; the page schema converts what it
needs (``order`` to an int). Anything outside this grammar — tabs, deeper
nesting, a repeated key, flow syntax like ``[a, b]`` — is an error that names
the line, so a typo never turns silently into a different value. Every file
that parses here is also valid YAML meaning the same thing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import ContentError

_KEY = r"[a-z][a-z0-9_]*"
_ENTRY = re.compile(rf"^(?P<key>{_KEY}):(?:[ ](?P<value>.*))?$")


class FrontMatterError(ContentError):
    def __init__(self, message: str, line: int) -> None:
        self.line = line
        super().__init__(f"front matter line {line}: {message}")


def parse_front_matter(text: str) -> dict[str, Any]:
    lines = [(number, raw.rstrip()) for number, raw in enumerate(text.splitlines(), start=1)]
    lines = [(n, raw) for n, raw in lines if raw.strip() and not raw.startswith("#")]
    for number, raw in lines:
        if "\t" in raw:
            raise FrontMatterError("tabs are not allowed; indent with spaces", number)
    result: dict[str, Any] = {}
    index = 0
    while index < len(lines):
        number, raw = lines[index]
        if raw.startswith(" "):
            raise FrontMatterError(f"unexpected indentation: {raw.strip()!r}", number)
        key, value = _split_entry(raw, number)
        if key in result:
            raise FrontMatterError(f"key {key!r} given twice", number)
        index += 1
        block = []
        while index < len(lines) and lines[index][1].startswith("  "):
            block.append(lines[index])
            index += 1
        if value is None:
            if not block:
                raise FrontMatterError(f"key {key!r} has no value", number)
            result[key] = _nested(block)
        elif value == ">":
            if not block:
                raise FrontMatterError(f"folded key {key!r} has no lines", number)
            result[key] = " ".join(raw.strip() for _, raw in block)
        else:
            if block:
                raise FrontMatterError(
                    f"key {key!r} has a value on its line and indented lines below", block[0][0]
                )
            result[key] = _scalar(value, number)
    return result


def _split_entry(text: str, number: int) -> tuple[str, str | None]:
    match = _ENTRY.match(text)
    if not match:
        raise FrontMatterError(f"expected 'key: value', got {text.strip()!r}", number)
    value = match.group("value")
    value = value.strip() if value is not None else None
    return match.group("key"), (value or None)


def _scalar(value: str, number: int) -> str:
    if value.startswith('"'):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            raise FrontMatterError(f"bad quoted string {value!r}", number) from None
        if not isinstance(decoded, str):
            raise FrontMatterError(f"bad quoted string {value!r}", number)
        return decoded
    if value[0] in "[]{}&*!|'%@`" or value.startswith("- "):
        raise FrontMatterError(
            f"a value starting with {value[0]!r} must be written as a \"quoted string\"", number
        )
    if ": " in value or value.endswith(":"):
        raise FrontMatterError("': ' inside a plain value is ambiguous; quote the value", number)
    if " #" in value:
        raise FrontMatterError("' #' would start a YAML comment; quote the value", number)
    return value


def _nested(block: list[tuple[int, str]]) -> list[Any] | dict[str, str]:
    _first_number, first = block[0]
    if first.startswith("  - ") or first == "  -":
        return _list(block)
    return _mapping(block, indent=2)


def _mapping(block: list[tuple[int, str]], indent: int) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for number, raw in block:
        body = raw[indent:]
        if raw[:indent].strip() or body.startswith(" "):
            raise FrontMatterError(f"expected {indent} spaces of indentation", number)
        key, value = _split_entry(body, number)
        if value is None or value == ">":
            raise FrontMatterError("nested values go only one level deep", number)
        if key in mapping:
            raise FrontMatterError(f"key {key!r} given twice", number)
        mapping[key] = _scalar(value, number)
    return mapping


def _list(block: list[tuple[int, str]]) -> list[Any]:
    items: list[Any] = []
    current: list[tuple[int, str]] | None = None

    def close() -> None:
        if current is None:
            return
        number, head = current[0]
        if _ENTRY.match(head):
            items.append(_mapping([(n, "    " + text) for n, text in current], indent=4))
        else:
            if len(current) > 1:
                raise FrontMatterError("a plain list item takes one line", current[1][0])
            items.append(_scalar(head, number))

    for number, raw in block:
        if raw.startswith("  - "):
            close()
            current = [(number, raw[4:].strip())]
        elif raw.startswith("    ") and not raw[4:].startswith(" ") and current is not None:
            current.append((number, raw[4:]))
        else:
            raise FrontMatterError(f"expected a '  - ' list item, got {raw.strip()!r}", number)
    close()
    return items
