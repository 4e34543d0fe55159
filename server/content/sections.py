"""A page body grouped into sections, one per ``## `` heading: prose, an ``<aside>`` of its widgets,
then ``prose-after``: cut at the first widget, so on a phone it follows the words that introduce it."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererProtocol
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

ASIDE_TYPES = frozenset({"widget"})


def sections_plugin(md: MarkdownIt) -> None:
    def dive_sections(state: StateCore) -> None:
        tokens = state.tokens
        starts = [i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2" and t.level == 0]
        if not starts:
            return
        out: list[Token] = []
        intro = tokens[: starts[0]]
        out.extend(t for t in intro if t.type == "front_matter")
        intro = [t for t in intro if t.type != "front_matter"]
        if intro:
            out += _wrapped("dive_intro_open", intro, "dive_intro_close")
        for number, (first, end) in enumerate(itertools.pairwise([*starts, len(tokens)]), start=1):
            heading = tokens[first]
            title = "".join(c.content for c in tokens[first + 1].children or []
                            if c.type in {"text", "code_inline"}).strip()
            slug = heading.attrGet("id") or f"section-{number}"
            heading.attrSet("id", f"{slug}-title")
            chunk = tokens[first:end]
            in_aside = [t.level == 0 and t.type in ASIDE_TYPES for t in chunk]
            cut = in_aside.index(True) if any(in_aside) else len(chunk)
            before = chunk[:cut]  # no aside before the first one
            after = [t for t, aside in zip(chunk[cut:], in_aside[cut:], strict=True) if not aside]
            aside = [t for t, aside in zip(chunk, in_aside, strict=True) if aside]
            out.append(_marker("dive_section_open", {"id": slug, "title": title, "aside": bool(aside)}))
            out += _wrapped("dive_prose_open", before, "dive_prose_close")
            if aside:
                out += _wrapped("dive_aside_open", aside, "dive_aside_close")
            if after:
                out += _wrapped("dive_after_open", after, "dive_prose_close")
            out.append(_marker("dive_section_close"))
        state.tokens = out

    md.core.ruler.after("anchor", "dive_sections", dive_sections)
    for name, fn in _RENDER.items():
        md.add_render_rule(name, fn)


def _marker(kind: str, meta: dict[str, Any] | None = None) -> Token:
    return Token(kind, "", 0, block=True, meta=dict(meta or {}))


def _wrapped(opening: str, tokens: list[Token], closing: str) -> list[Token]:
    return [_marker(opening), *tokens, _marker(closing)]


def _section_open(self: RendererProtocol, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    meta = tokens[idx].meta
    extra = " has-aside" if meta["aside"] else ""
    # No accessible name on purpose: a named <section> is a region, and the
    # widgets are the page's regions ("the fan-in counter"); a dive section
    # named "The fan-in" would make a search for that region ambiguous.
    return f'<section class="dive-section{extra}" id="{escapeHtml(meta["id"])}">\n'


_RENDER = {
    "dive_intro_open": lambda self, *a: '<div class="prose dive-intro">\n',
    "dive_intro_close": lambda self, *a: "</div>\n",
    "dive_section_open": _section_open,
    "dive_section_close": lambda self, *a: "</section>\n",
    "dive_prose_open": lambda self, *a: '<div class="prose">\n',
    "dive_prose_close": lambda self, *a: "</div>\n",
    "dive_after_open": lambda self, *a: '<div class="prose prose-after">\n',
    # No accessible name on purpose: an unnamed aside inside a section is not
    # a complementary landmark, so it never nests a landmark inside <main>.
    "dive_aside_open": lambda self, *a: '<aside class="dive-aside">\n',
    "dive_aside_close": lambda self, *a: "</aside>\n",
}
