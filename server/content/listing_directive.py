"""The ``{listing}`` directive: code exactly as the server runs it (``NAME.lua``, ``NAME.lua#MOVE``,
``NAME.lua#lines=A-B`` or ``server/PATH.py::FUNCTION``), with ``caption:`` and ``fold: <summary>``
(a ``<details>``, for plumbing). Anything missing fails the course load."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from server.emq.includes import helpers_shown
from server.emq.registry import cut_moves

from .directive import Directive, directive_plugin
from .errors import DirectiveError
from .host_code import HOST_ARGUMENT, HostFiles, HostFunction, HostMissing
from .scripts import DISPLAY_DIR, RegistryScripts, ScriptMissing, ScriptSource

_ARGUMENT = re.compile(
    r"^(?P<stem>[A-Za-z0-9_]+)\.lua"
    r"(?:#(?:(?P<move>\d+)|lines=(?P<first>\d+)-(?P<last>\d+)))?$"
)
KNOWN_OPTIONS = {"caption", "fold"}


@dataclass(frozen=True)
class ListingLine:
    number: int
    text: str
    move: int | None


def listing_plugin(md: MarkdownIt, scripts: ScriptSource | None = None, host: HostFiles | None = None) -> None:
    source = scripts if scripts is not None else RegistryScripts()
    host_files = host if host is not None else HostFiles()

    def build(directive: Directive, state: StateCore) -> dict[str, Any]:
        arg, opts, where = directive.argument, directive.text_options(KNOWN_OPTIONS), directive.line
        if HOST_ARGUMENT.match(arg):
            path, _, name = arg.partition("::")
            try:
                meta = {"host": host_files.function(path, name), "caption": opts.get("caption")}
            except (HostMissing, SyntaxError) as exc:
                raise DirectiveError(f"{{listing}} {arg}: {exc}", where) from None
        else:
            meta = _resolve(source, arg, opts, where)
        fold = opts.get("fold", "").strip()
        if "fold" in opts and not fold:
            raise DirectiveError("{listing} fold: needs a one-line summary", directive.body.line_of("fold"))
        meta["fold_html"] = state.md.renderInline(fold) if fold else None
        return meta

    directive_plugin(md, "listing", "figure", build, render_listing)


def _resolve(source: ScriptSource, argument: str, options: dict[str, str], line: int | None) -> dict[str, Any]:
    """The lines asked for (a move, a range, or all), tagged with their move; the figure's attributes and title."""
    match = _ARGUMENT.match(argument)
    if not match:
        raise DirectiveError("{listing} takes NAME.lua, NAME.lua#MOVE, NAME.lua#lines=A-B "
                             f"or server/PATH.py::FUNCTION, got {argument!r}", line)
    stem = match.group("stem")
    try:
        text = source.script_source(stem)
    except ScriptMissing as exc:
        raise DirectiveError(str(exc), line) from None
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
    return {"attrs": attrs, "title": title, "caption": options.get("caption"), "includes": includes, "lines": lines}


def render_listing(self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict,
                   env: EnvType) -> str:
    meta = tokens[idx].meta
    if "host" in meta:
        figure = _render_host(meta["host"], meta["caption"])
    else:
        figure = _figure("listing", meta["attrs"], meta["title"], meta["caption"], meta["lines"], "lua")
    if not meta.get("fold_html"):
        return figure
    return f'<details class="listing-fold"><summary>{meta["fold_html"]}</summary>\n{figure}</details>\n'


def _render_host(found: HostFunction, note: str | None) -> str:
    caption = (f"<code>{escapeHtml(found.path)}</code> · <code>{escapeHtml(found.name)}</code>"
               f" · lines {found.first_line}–{found.last_line}")
    lines = [ListingLine(number, text, None) for number, text in enumerate(found.lines, start=found.first_line)]
    where = escapeHtml(f"{found.path}::{found.name}")
    return _figure("listing listing-host", f' data-host="{where}"', caption, note, lines, "python")


def _figure(classes: str, attrs: str, caption: str, note: str | None, lines: Sequence[ListingLine],
            language: str) -> str:
    if note:
        caption += f' <span class="listing-note">— {escapeHtml(note)}</span>'
    body = "\n".join(_render_line(line) for line in lines)
    return (
        f'<figure class="{classes}"{attrs}><figcaption>{caption}</figcaption>'
        f'<pre tabindex="0"><code class="language-{language}">{body}\n</code></pre></figure>\n'
    )


def _render_line(line: ListingLine) -> str:
    move = f' data-move="{line.move}"' if line.move is not None else ""
    return f'<span class="line" data-line="{line.number}"{move}>{escapeHtml(line.text)}</span>'
