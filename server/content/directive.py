"""Shared parsing for MyST-style directive fences.

A directive is a fenced code block whose info string starts with a braced
name::

    ```{widget} fanin
    start: 2
    ```

``{name}`` picks the directive, the rest of the info line is its argument,
and the body holds optional ``key: value`` option lines (blank lines are
allowed, anything else is an error). Each directive plugin calls
:func:`find_directive` from its own core rule; no plugin renders here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it.token import Token

from .errors import DirectiveError

_INFO = re.compile(r"^\{(?P<name>[a-z][a-z0-9_-]*)\}(?:\s+(?P<arg>.*?))?\s*$")
_OPTION = re.compile(r"^(?P<key>[a-z][a-z0-9_-]*)\s*:\s*(?P<value>.*?)\s*$")


@dataclass(frozen=True)
class Directive:
    name: str
    argument: str
    options: dict[str, str]
    line: int | None


def fence_line(token: Token) -> int | None:
    """The 1-based source line of a block token, when markdown-it knows it."""
    return token.map[0] + 1 if token.map else None


def find_directive(token: Token, name: str) -> Directive | None:
    """Read ``token`` as the directive ``name``; ``None`` when it is not one."""
    if token.type != "fence":
        return None
    match = _INFO.match(token.info.strip())
    if not match or match.group("name") != name:
        return None
    line = fence_line(token)
    return Directive(
        name=name,
        argument=(match.group("arg") or "").strip(),
        options=parse_options(token.content, name, line),
        line=line,
    )


def as_leaf(token: Token, kind: str, tag: str) -> None:
    """Turn a directive's fence into a leaf block token of `kind`, its text
    gone: the plugin's render rule draws it from `token.meta` alone."""
    token.type = kind
    token.tag = tag
    token.nesting = 0
    token.block = True
    token.info = ""
    token.content = ""


def parse_options(body: str, directive: str, line: int | None) -> dict[str, str]:
    options: dict[str, str] = {}
    for offset, raw in enumerate(body.splitlines(), start=1):
        text = raw.strip()
        if not text:
            continue
        match = _OPTION.match(text)
        where = line + offset if line is not None else None
        if not match:
            raise DirectiveError(
                f"{{{directive}}} body lines must read 'key: value', got {text!r}", where
            )
        key = match.group("key")
        if key in options:
            raise DirectiveError(f"{{{directive}}} option {key!r} given twice", where)
        options[key] = match.group("value")
    return options
