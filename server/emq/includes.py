"""The include step: a shared Lua rule written once, pasted where it is used.

``-- @include release_parent`` becomes ``includes/release_parent.lua`` between two fence
lines; the expanded text is what is registered and listed. A helper is pasted once per
script, at its first marker; an unknown name or a cycle raises ``IncludeError`` at load.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

MARKER_RE: Final = re.compile(r"^\s*--\s*@include\s+(\S+)\s*$")
NAME_RE: Final = re.compile(r"[a-z][a-z0-9_]*")  # a helper's or a script's name
FOLDER: Final = "includes"
_OPENING_RE: Final = re.compile(r"^-- ▼ included from " + FOLDER + r"/([a-z][a-z0-9_]*)\.lua$")


class IncludeError(LookupError):
    """A ``-- @include`` marker that cannot be expanded (unknown name, cycle)."""


def opening(name: str) -> str:
    return f"-- ▼ included from {FOLDER}/{name}.lua"


def closing(name: str) -> str:
    return f"-- ▲ end of {FOLDER}/{name}.lua"


def repeated(name: str) -> str:
    """What a second marker for an already pasted helper becomes."""
    return f"-- ↑ {FOLDER}/{name}.lua is already included above"


def helpers_shown(expanded: str) -> list[str]:
    """The helpers an expanded text carries, in order, read from its opening fences."""
    return [found.group(1) for line in expanded.splitlines() if (found := _OPENING_RE.match(line))]


def includes_of(source: str) -> list[str]:
    """The helper names a text's own markers ask for, in order (not recursive)."""
    return [found.group(1) for line in source.splitlines() if (found := MARKER_RE.match(line))]


def expand(where: str, source: str, scripts_dir: Path) -> str:
    """``source`` with every marker replaced by its helper from ``scripts_dir/includes``
    (``where`` names it in errors); a text with no marker comes back byte for byte."""
    if not includes_of(source):
        return source
    lines = _expand_lines(where, source, scripts_dir / FOLDER, pasted=set(), chain=())
    return "\n".join(lines) + "\n"


def _expand_lines(where: str, source: str, folder: Path, pasted: set[str], chain: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for number, line in enumerate(source.splitlines(), start=1):
        found = MARKER_RE.match(line)
        if found is None:
            out.append(line)
            continue
        name = found.group(1)
        if name in chain:
            cycle = " -> ".join((*chain, name))
            raise IncludeError(f"{where} line {number}: include cycle {cycle}")
        if name in pasted:
            out.append(repeated(name))
            continue
        if not NAME_RE.fullmatch(name):
            raise IncludeError(f"{where} line {number}: '-- @include {name}' is not a helper name")
        path = folder / f"{name}.lua"
        if not path.is_file():
            raise IncludeError(f"{where} line {number}: '-- @include {name}' names no file {FOLDER}/{name}.lua")
        text = path.read_text(encoding="utf-8").rstrip("\n")
        pasted.add(name)
        out.append(opening(name))
        out.extend(_expand_lines(f"{FOLDER}/{name}.lua", text, folder, pasted, (*chain, name)))
        out.append(closing(name))
    return out

