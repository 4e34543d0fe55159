"""Host listings: a top-level Python function of ``server/`` cut by name with :mod:`ast` (with its
comments above and decorators) each time the course loads, so a listing cannot drift from the code."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# server/<folders>/<file>.py::<function>; no "..", no absolute paths.
HOST_ARGUMENT = re.compile(r"^(?P<path>server/(?:[a-z0-9_]+/)*[a-z0-9_]+\.py)::(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")


class HostMissing(LookupError):
    """The file, or the function in it, is not there."""


@dataclass(frozen=True)
class HostFunction:
    path: str
    name: str
    first_line: int
    last_line: int
    lines: tuple[str, ...]


def cut_function(source: str, name: str, path: str = "<source>") -> HostFunction:
    tree = ast.parse(source, filename=path)
    lines = source.splitlines()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            while first > 1 and lines[first - 2].lstrip().startswith("#"):
                first -= 1
            last = node.end_lineno or node.lineno
            return HostFunction(path, name, first, last, tuple(lines[first - 1 : last]))
    known = sorted(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    raise HostMissing(f"{path} has no top-level function {name!r} (it defines: {', '.join(known) or 'none'})")


class HostFiles:
    """Host files under one root (the repository, by default)."""

    def __init__(self, root: str | Path = REPO_ROOT) -> None:
        self.root = Path(root)

    def function(self, path: str, name: str) -> HostFunction:
        file = self.root / path
        try:
            source = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HostMissing(f"no host file {path}") from None
        return cut_function(source, name, path)
