"""Every ``scripts/*.lua`` file: its parsed header, its moves, and running it.

The one place that reads them. ``script_source`` (includes expanded) is the text
registered, listed and cut into stepper moves (``-- @move <n>: <title>``);
``prefix_source(name, n)`` runs through move ``n`` only, then returns.

The course's wrong variants of its own scripts are written once for every layer using them: a body
in ``scripts/variants/``, dressed in its course script's header and with its includes expanded, is
the exact text Valkey runs (e.g. the early-release ``complete``: the second exercise's starter and
the race widget's script, one file so they never drift).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import takewhile
from pathlib import Path
from typing import Any, Final

from server.emq.includes import NAME_RE, expand
from server.emq.script import Arg, Script
from server.emq.wire import Conn

SCRIPTS_DIR: Final = Path(__file__).resolve().parent / "scripts"

_MOVE_RE: Final = re.compile(r"^\s*--\s*@move\s+(\d+)\s*:\s*(.*?)\s*$")
_TITLE_RE: Final = re.compile(r"^--\s*([a-z][a-z0-9_]*)\s*:\s*(.*)$")
_SECTION_RE: Final = re.compile(r"^--\s*(?:(KEYS|ARGV)\[|(?i:Returns|Errors)\b)")


@dataclass(frozen=True)
class ScriptDoc:
    name: str
    summary: str
    keys: tuple[str, ...]
    argv: tuple[str, ...]
    returns: tuple[str, ...]
    path: Path


@dataclass(frozen=True)
class Move:
    """One stepper move: marker line through the line before the next marker."""

    number: int
    title: str
    first_line: int  # 1-based, the marker line itself
    last_line: int  # 1-based, inclusive
    text: str


def names() -> list[str]:
    """Every script name (file stem), sorted."""
    return sorted(p.stem for p in SCRIPTS_DIR.glob("*.lua"))


def script_path(name: str) -> Path:
    """The file of script ``name``; refuses names that are not plain stems."""
    if not NAME_RE.fullmatch(name):
        raise KeyError(f"not a script name: {name!r}")
    path = SCRIPTS_DIR / f"{name}.lua"
    if not path.is_file():
        raise KeyError(f"no such script: {name!r}")
    return path


@cache
def file_source(name: str) -> str:
    """The script's file, exactly as written (include markers unexpanded)."""
    return script_path(name).read_text(encoding="utf-8")


@cache
def script_source(name: str) -> str:
    """The script as the server runs it: the file with its includes expanded."""
    return expand(f"{name}.lua", file_source(name), SCRIPTS_DIR)


def load_all() -> dict[str, str]:
    """Expand every script now (name -> SHA): a broken include fails here, at start."""
    return {name: script(name).sha for name in names()}


@cache
def doc(name: str) -> ScriptDoc:
    """Parse the header (the leading run of comment lines): title, KEYS, ARGV, Returns/Errors lines
    (an indented ``--   more`` line continues the entry above it; other lines are notes)."""
    header = [line.strip() for line in takewhile(lambda line: line.strip().startswith("--"),
                                                   file_source(name).splitlines())]
    title = _TITLE_RE.match(header[0]) if header else None
    if title is None or title.group(1) != name:
        raise ValueError(f"{name}.lua: header must open with '-- {name}: <summary>'")
    found: dict[str, list[str]] = {"KEYS": [], "ARGV": [], "Returns": []}
    current: list[str] = []
    for line in header[1:]:
        body = line[2:].strip()
        if section := _SECTION_RE.match(line):
            current = found[section.group(1) or "Returns"]
            current.append(body)
        elif line.startswith("--  ") and current:
            current[-1] += " " + body
        else:
            current = []  # a note of the header: nothing reads it
    return ScriptDoc(name, title.group(2).strip(), tuple(found["KEYS"]), tuple(found["ARGV"]), tuple(found["Returns"]),
                     script_path(name))


def cut_moves(source: str, where: str = "script") -> tuple[Move, ...]:
    """Cut ``source`` at its ``-- @move <n>: <title>`` markers (numbered 1..n); a move
    runs to the line before the next marker, blank lines between moves in neither."""
    lines = source.splitlines()
    marks = [
        (index, int(found.group(1)), found.group(2))
        for index, line in enumerate(lines)
        if (found := _MOVE_RE.match(line))
    ]
    numbers = [number for _, number, _ in marks]
    if numbers != list(range(1, len(marks) + 1)):
        raise ValueError(f"{where}: moves must be numbered 1..n in order, got {numbers}")
    result: list[Move] = []
    for position, (index, number, title) in enumerate(marks):
        end = marks[position + 1][0] if position + 1 < len(marks) else len(lines)
        while end > index + 1 and not lines[end - 1].strip():
            end -= 1
        text = "\n".join(lines[index:end]) + "\n"
        result.append(Move(number, title, first_line=index + 1, last_line=end, text=text))
    return tuple(result)


@cache
def moves(name: str) -> tuple[Move, ...]:
    """The script's moves in order (empty when it has no markers)."""
    return cut_moves(script_source(name), f"{name}.lua")


@cache
def prefix_source(name: str, n: int) -> str:
    """The script through move ``n``, then a ``return`` (through the last move: the whole script)."""
    all_moves = moves(name)
    if not 1 <= n <= len(all_moves):
        raise ValueError(f"{name}.lua has {len(all_moves)} moves; no move {n}")
    source = script_source(name)
    if n == len(all_moves):
        return source
    lines = source.splitlines()[: all_moves[n - 1].last_line]
    lines.append(f"return nil -- stepper: stop after move {n}")
    return "\n".join(lines) + "\n"


def dressed(script: str, where: str, body: str) -> str:
    """`body` under course script `script`'s header (its leading comment block: summary, KEYS, ARGV,
    returns), its includes expanded (`where` names it in errors)."""
    header = takewhile(lambda line: line.startswith("--"), file_source(script).splitlines())
    return expand(where, "\n".join(header) + "\n\n" + body, SCRIPTS_DIR)


@cache
def variant_source(name: str, script: str) -> str:
    """Variant `name` (``scripts/variants/<name>.lua``) of course script `script`, as Valkey runs it."""
    where = f"variants/{name}.lua"
    return dressed(script, where, (SCRIPTS_DIR / where).read_text("utf-8"))


@cache  # one Script per name: its SHA is hashed once, not at every call
def script(name: str) -> Script:
    return Script(name, script_source(name))


async def run(conn: Conn, name: str, keys: Sequence[str], args: Sequence[Arg]) -> Any:
    """Run script ``name`` by SHA; an error reply raises its typed ``EmqError``."""
    return await script(name).run(conn, keys, args)


async def run_prefix(conn: Conn, name: str, n: int, keys: Sequence[str], args: Sequence[Arg]) -> Any:
    """Run ``name`` only through move ``n`` (the stepper's partial state)."""
    return await Script(f"{name}#{n}", prefix_source(name, n)).run(conn, keys, args)
