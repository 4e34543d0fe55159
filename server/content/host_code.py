"""Host listings: one Python function cut, by name, out of a file under ``server/``.

A dive shows the host half of a transition (the code that builds the keys)
next to the script half. Both come from the files the server runs, so a
listing cannot drift from the code: the function is found with :mod:`ast`
each time the course loads, and a name that no longer exists is an error
then, never a stale snippet on the page.

What a cut holds: the comment lines directly above the function (they say
why it exists), its decorators, its signature, its docstring and its body,
down to the function's last line.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from markdown_it.common.utils import escapeHtml

from .errors import DirectiveError

REPO_ROOT = Path(__file__).resolve().parents[2]

# server/<folders>/<file>.py::<function>; no "..", no absolute paths.
HOST_ARGUMENT = re.compile(
    r"^(?P<path>server/(?:[a-z0-9_]+/)*[a-z0-9_]+\.py)::(?P<name>[A-Za-z_][A-Za-z0-9_]*)$"
)


class HostMissing(LookupError):
    """The file, or the function in it, is not there."""


@dataclass(frozen=True)
class HostFunction:
    path: str
    name: str
    first_line: int
    last_line: int
    lines: tuple[str, ...]


class HostSource(Protocol):
    def function(self, path: str, name: str) -> HostFunction: ...


def cut_function(source: str, name: str, path: str = "<source>") -> HostFunction:
    """The top-level function ``name`` of ``source``, with its comments and decorators."""
    tree = ast.parse(source, filename=path)
    lines = source.splitlines()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            while first > 1 and lines[first - 2].lstrip().startswith("#"):
                first -= 1
            last = node.end_lineno or node.lineno
            return HostFunction(path, name, first, last, tuple(lines[first - 1 : last]))
    known = sorted(
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    raise HostMissing(
        f"{path} has no top-level function {name!r} (it defines: {', '.join(known) or 'none'})"
    )


class HostFiles:
    """Read host files relative to one root (the repository, by default)."""

    def __init__(self, root: str | Path = REPO_ROOT) -> None:
        self.root = Path(root)

    def function(self, path: str, name: str) -> HostFunction:
        file = self.root / path
        try:
            source = file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise HostMissing(f"no host file {path}") from None
        return cut_function(source, name, path)


def resolve_host_listing(
    source: HostSource, argument: str, options: dict[str, str], line: int | None
) -> dict[str, object] | None:
    """The ``listing`` token meta for ``server/…py::name``; ``None`` for other arguments."""
    match = HOST_ARGUMENT.match(argument)
    if match is None:
        return None
    try:
        found = source.function(match.group("path"), match.group("name"))
    except (HostMissing, SyntaxError) as exc:
        raise DirectiveError(f"{{listing}} {argument}: {exc}", line) from None
    return {"host": found, "caption": options.get("caption")}


def render_host_listing(meta: dict[str, object]) -> str:
    """A host function as a numbered listing, every line escaped."""
    found = meta["host"]
    assert isinstance(found, HostFunction)
    caption = (
        f"<code>{escapeHtml(found.path)}</code> · <code>{escapeHtml(found.name)}</code>"
        f" · lines {found.first_line}–{found.last_line}"
    )
    note = meta.get("caption")
    if isinstance(note, str) and note:
        caption += f' <span class="listing-note">— {escapeHtml(note)}</span>'
    body = "\n".join(
        f'<span class="line" data-line="{number}">{escapeHtml(text)}</span>'
        for number, text in enumerate(found.lines, start=found.first_line)
    )
    where = escapeHtml(f"{found.path}::{found.name}")
    return (
        f'<figure class="listing listing-host" data-host="{where}"><figcaption>{caption}</figcaption>'
        f'<pre tabindex="0"><code class="language-python">{body}\n</code></pre></figure>\n'
    )
