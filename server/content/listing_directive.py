"""The ``{listing}`` directive: code exactly as the server runs it (``NAME.lua``, ``NAME.lua#MOVE``,
``NAME.lua#lines=A-B`` or ``server/PATH.py::FUNCTION``), with ``caption:`` and ``fold: <summary>``
(a ``<details>``, for plumbing). Anything missing fails the course load.

Lua is read as the server runs it (includes expanded, so line numbers are the registered text's),
from the registry or, in tests, a folder. A host function is cut by name with :mod:`ast` (with its
comments above and decorators) each time the course loads, so a listing cannot drift from the code."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from server.emq import registry
from server.emq.includes import IncludeError, expand, helpers_shown
from server.emq.registry import cut_moves

from .directive import Directive, directive_plugin
from .errors import DirectiveError

REPO_ROOT = Path(__file__).resolve().parents[2]
DISPLAY_DIR = "server/emq/scripts"
_ARGUMENT = re.compile(
    r"^(?P<stem>[A-Za-z0-9_]+)\.lua"
    r"(?:#(?:(?P<move>\d+)|lines=(?P<first>\d+)-(?P<last>\d+)))?$"
)
# server/<folders>/<file>.py::<function>; no "..", no absolute paths.
HOST_ARGUMENT = re.compile(r"^(?P<path>server/(?:[a-z0-9_]+/)*[a-z0-9_]+\.py)::(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
KNOWN_OPTIONS = {"caption", "fold"}


class HostMissing(LookupError):
    """The file, or the function in it, is not there."""


@dataclass(frozen=True)
class HostFunction:
    path: str
    name: str
    first_line: int
    last_line: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class ListingLine:
    number: int
    text: str
    move: int | None


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


def listing_plugin(md: MarkdownIt, scripts: Path | None = None, host: Path = REPO_ROOT) -> None:
    """``scripts``: a folder of ``<stem>.lua`` files (helpers in its ``includes/``), else the registry's;
    ``host``: the root host files are read under."""

    def build(directive: Directive, state: StateCore) -> dict[str, Any]:
        arg, opts, where = directive.argument, directive.text_options(KNOWN_OPTIONS), directive.line
        if HOST_ARGUMENT.match(arg):
            path, _, name = arg.partition("::")
            try:
                source = (host / path).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise DirectiveError(f"{{listing}} {arg}: no host file {path}", where) from None
            try:
                found = cut_function(source, name, path)
            except (HostMissing, SyntaxError) as exc:
                raise DirectiveError(f"{{listing}} {arg}: {exc}", where) from None
            title = (f"<code>{escapeHtml(path)}</code> · <code>{escapeHtml(name)}</code>"
                     f" · lines {found.first_line}–{found.last_line}")
            lines = [ListingLine(n, text, None) for n, text in enumerate(found.lines, start=found.first_line)]
            meta = {"host": found, "classes": "listing listing-host", "attrs": f' data-host="{escapeHtml(arg)}"',
                    "title": title, "caption": opts.get("caption"), "lines": lines, "language": "python"}
        else:
            meta = _resolve(scripts, arg, opts, where)
        fold = opts.get("fold", "").strip()
        if "fold" in opts and not fold:
            raise DirectiveError("{listing} fold: needs a one-line summary", directive.body.line_of("fold"))
        meta["fold_html"] = state.md.renderInline(fold) if fold else None
        return meta

    directive_plugin(md, "listing", "figure", build, render_listing)


def _script_text(folder: Path | None, stem: str, line: int | None) -> str:
    try:
        if folder is None:
            return registry.script_source(stem)
        path = folder / f"{stem}.lua"
        if not path.is_file():
            raise DirectiveError(f"no script {path}", line)
        return expand(f"{stem}.lua", path.read_text(encoding="utf-8"), folder)
    except IncludeError as exc:
        raise DirectiveError(str(exc), line) from None
    except KeyError as exc:
        raise DirectiveError(f"no script {stem}.lua in the registry: {exc}", line) from None


def _resolve(folder: Path | None, argument: str, options: dict[str, str], line: int | None) -> dict[str, Any]:
    """The lines asked for (a move, a range, or all), tagged with their move; the figure's attributes and title."""
    match = _ARGUMENT.match(argument)
    if not match:
        raise DirectiveError("{listing} takes NAME.lua, NAME.lua#MOVE, NAME.lua#lines=A-B "
                             f"or server/PATH.py::FUNCTION, got {argument!r}", line)
    stem = match.group("stem")
    text = _script_text(folder, stem, line)
    moves = cut_moves(text, f"{stem}.lua")
    owner = {n: m.number for m in moves for n in range(m.first_line, m.last_line + 1)}
    lines = [ListingLine(number, raw, owner.get(number)) for number, raw in enumerate(text.splitlines(), start=1)]
    includes = helpers_shown(text)
    attrs, detail = f' data-script="{escapeHtml(stem)}"', ""
    if match.group("move"):
        wanted = int(match.group("move"))
        found = next((m for m in moves if m.number == wanted), None)
        if found is None:
            raise DirectiveError(f"{stem}.lua has no move {wanted}", line)
        attrs += f' data-move="{wanted}"'
        detail = f" · move {wanted}: {escapeHtml(found.title)}"
        lines = lines[found.first_line - 1 : found.last_line]
    elif match.group("first"):
        first, last = int(match.group("first")), int(match.group("last"))
        if not 1 <= first <= last <= len(lines):
            raise DirectiveError(f"{stem}.lua has {len(lines)} lines; range {first}-{last} is outside it", line)
        attrs += f' data-lines="{first}-{last}"'
        detail = f" · lines {first}–{last}"
        lines = lines[first - 1 : last]
    elif includes:  # the whole script: say which helpers it shows
        detail = " · includes expanded: " + ", ".join(escapeHtml(name) for name in includes)
    title = f"<code>{escapeHtml(f'{DISPLAY_DIR}/{stem}.lua')}</code>{detail}"
    return {"classes": "listing", "attrs": attrs, "title": title, "caption": options.get("caption"),
            "includes": includes, "lines": lines, "language": "lua"}


def render_listing(self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict,
                   env: EnvType) -> str:
    meta = tokens[idx].meta
    figure = _figure(meta["classes"], meta["attrs"], meta["title"], meta["caption"], meta["lines"], meta["language"])
    if not meta.get("fold_html"):
        return figure
    return f'<details class="listing-fold"><summary>{meta["fold_html"]}</summary>\n{figure}</details>\n'


def _figure(classes: str, attrs: str, caption: str, note: str | None, lines: Sequence[ListingLine],
            language: str) -> str:
    if note:
        caption += f' <span class="listing-note">— {escapeHtml(note)}</span>'
    body = "\n".join(
        f'<span class="line" data-line="{line.number}"'
        + (f' data-move="{line.move}"' if line.move is not None else "")
        + f">{escapeHtml(line.text)}</span>"
        for line in lines
    )
    return (
        f'<figure class="{classes}"{attrs}><figcaption>{caption}</figcaption>'
        f'<pre tabindex="0"><code class="language-{language}">{body}\n</code></pre></figure>\n'
    )
