"""A page body grouped into sections, one per ``## `` heading: prose, an ``<aside>`` of its widgets,
then ``prose-after``: cut at the first widget, so on a phone it follows the words that introduce it.
The wrappers are marker tokens carrying their own HTML (``dive_section_open`` also the section's
id and title, which the page loader lists)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

ASIDE_TYPES = frozenset({"widget"})
_PROSE = ('<div class="prose">\n', "</div>\n")
# No accessible name on purpose: an unnamed aside inside a section is not
# a complementary landmark, so it never nests a landmark inside <main>.
_ASIDE = ('<aside class="dive-aside">\n', "</aside>\n")


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
            out += _wrapped(('<div class="prose dive-intro">\n', "</div>\n"), intro)
        for number, (first, end) in enumerate(itertools.pairwise([*starts, len(tokens)]), start=1):
            heading = tokens[first]
            title = "".join(c.content for c in tokens[first + 1].children or []
                            if c.type in {"text", "code_inline"}).strip()
            slug = str(heading.attrGet("id") or f"section-{number}")
            heading.attrSet("id", f"{slug}-title")
            chunk = tokens[first:end]
            in_aside = [t.level == 0 and t.type in ASIDE_TYPES for t in chunk]
            cut = in_aside.index(True) if any(in_aside) else len(chunk)
            before = chunk[:cut]  # no aside before the first one
            after = [t for t, aside in zip(chunk[cut:], in_aside[cut:], strict=True) if not aside]
            aside = [t for t, aside in zip(chunk, in_aside, strict=True) if aside]
            # No accessible name on purpose: a named <section> is a region, and the
            # widgets are the page's regions ("the fan-in counter"); a dive section
            # named "The fan-in" would make a search for that region ambiguous.
            html = f'<section class="dive-section{" has-aside" if aside else ""}" id="{escapeHtml(slug)}">\n'
            out.append(_marker(html, "dive_section_open", id=slug, title=title, aside=bool(aside)))
            out += _wrapped(_PROSE, before)
            if aside:
                out += _wrapped(_ASIDE, aside)
            if after:
                out += _wrapped(('<div class="prose prose-after">\n', "</div>\n"), after)
            out.append(_marker("</section>\n", "dive_section_close"))
        state.tokens = out

    md.core.ruler.after("anchor", "dive_sections", dive_sections)
    for kind in ("dive_section_open", "dive_section_close", "dive_block"):
        md.add_render_rule(kind, _render_marker)


def _marker(html: str, kind: str = "dive_block", **meta: Any) -> Token:
    return Token(kind, "", 0, block=True, meta={"html": html, **meta})


def _wrapped(html: tuple[str, str], tokens: list[Token]) -> list[Token]:
    return [_marker(html[0]), *tokens, _marker(html[1])]


def _render_marker(self: object, tokens: Sequence[Token], idx: int, *rest: object) -> str:
    return str(tokens[idx].meta["html"])
