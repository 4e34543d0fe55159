"""A page of the course: one ``site/content/**/*.md`` file, parsed.

Files and URLs::

    site/content/index.md              ->  /                 (the course index)
    site/content/<hub>/index.md        ->  /<hub>            (a hub: flows, batches)
    site/content/<hub>/<slug>.md       ->  /<hub>/<slug>     (a dive)

Each file opens with YAML front matter (:mod:`.frontmatter`). Fields:

==============  ======  =====================================================
field           pages   meaning
==============  ======  =====================================================
title           all     the page's h1
lede            all     one paragraph under the title (inline Markdown)
kicker          all     optional; a dive's default is "<Hub title> · dive NN"
order           hub,    a hub's place on the index / a dive's place in its
                dive    hub (a whole number)
summary         dive    optional one line for lists (defaults to the lede)
pattern         dive    the pattern, one sentence (inline Markdown)
implementation  dive    the implementation, one sentence (inline Markdown)
recap           dive    the recap paragraph (inline Markdown)
next            dive    a link entry: what to read next
related         dive    list of link entries: "Related in this course"
sources         dive    list of sources: title, href (http/https), note
==============  ======  =====================================================

Dives are numbered in the course's own order, across hubs: the hubs by
their ``order``, the dives of each hub by theirs. That number is the "NN"
of the kicker, and Previous / Next follow the same order, from the first
dive of the first hub to the last dive of the last.

A *link entry* is a mapping with ``note`` and one of:

* ``page: /flows/cross-queue`` — a page of this site; it must exist (loading
  fails otherwise), and its title is used unless ``title`` is given;
* ``href: https://…`` with ``title`` — an external page;
* ``title`` alone — resolved against the site's page titles; when no page
  matches, it is shown as plain text marked "(not in Flows Lab)", never as a
  link.

Loading (:mod:`.page_loader`) checks every internal link of every body: it
must name a page of the course (and, with a ``#fragment``, an id on that
page). Navigation (hub listing, previous/next) comes from ``order``, never
from lists kept in templates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from .widget_directive import Placement

CONTENT_DIR = Path(__file__).resolve().parents[2] / "site" / "content"
STATIC_DIR = Path(__file__).resolve().parents[2] / "site" / "static"

#: ids the dive template puts on every dive page, after the body sections
DIVE_PAGE_IDS = ("main", "pattern-and-implementation", "recap", "next", "references")

RenderWidget = Callable[[str, dict[str, Any]], str]
RenderPlacement = Callable[[Placement], str]
PageKind = Literal["index", "hub", "dive"]


@dataclass(frozen=True)
class Link:
    """One entry of "next", "related" or "sources"."""

    title: str
    note: str = ""
    href: str | None = None  # None: plain text, the page is not in Flows Lab
    external: bool = False
    note_html: Markup = Markup("")  # noqa: RUF009 -- the note as inline Markdown; Markup is an immutable str

    @property
    def in_course(self) -> bool:
        return self.href is not None and not self.external


@dataclass(frozen=True)
class SectionLink:
    id: str
    title: str

    @property
    def href(self) -> str:
        return f"#{self.id}"


@dataclass(eq=False)
class Page:
    path: str  # the URL: "/", "/flows", "/flows/cross-queue"
    kind: PageKind
    source: Path
    meta: dict[str, Any]  # the front matter, as parsed
    title: str
    lede: str
    kicker: str
    order: int
    hub_slug: str | None
    slug: str
    tokens: list[Token] = field(repr=False, default_factory=list)
    sections: list[SectionLink] = field(default_factory=list)
    widgets: list[str] = field(default_factory=list)  # in order, each name once
    placements: list[Placement] = field(default_factory=list)  # every {widget} fence, in order
    next: Link | None = None
    related: list[Link] = field(default_factory=list)
    sources: list[Link] = field(default_factory=list)
    # set by the Course once every page is loaded
    number: int = 0  # a dive's place in the whole course, from 1; 0 for the index and hubs
    hub: Page | None = field(default=None, repr=False)
    dives: list[Page] = field(default_factory=list, repr=False)  # a hub's dives
    prev_page: Page | None = field(default=None, repr=False)
    next_page: Page | None = field(default=None, repr=False)
    md: MarkdownIt | None = field(default=None, repr=False)
    _html: str | None = field(default=None, repr=False)

    # -- front matter fields -------------------------------------------------
    @property
    def pattern(self) -> str:
        return str(self.meta.get("pattern", ""))

    @property
    def implementation(self) -> str:
        return str(self.meta.get("implementation", ""))

    @property
    def recap(self) -> str:
        return str(self.meta.get("recap", ""))

    @property
    def summary(self) -> str:
        return str(self.meta.get("summary") or self.lede)

    def inline(self, name: str) -> Markup:
        """A front matter text field rendered as inline Markdown (raw HTML
        stays escaped), ready for a template: ``page.inline("recap")``."""
        text = self.lede if name == "lede" else str(self.meta.get(name, ""))
        return Markup(self._parser().renderInline(text))

    @property
    def lede_html(self) -> Markup:
        return self.inline("lede")

    @property
    def summary_html(self) -> Markup:
        return self.inline("summary") if self.meta.get("summary") else self.lede_html

    # -- body ----------------------------------------------------------------
    def render_body(
        self, render_widget: RenderWidget | None = None, *, render_placement: RenderPlacement | None = None
    ) -> Markup:
        """The body HTML. Each widget is drawn by ``render_placement(placement)``
        when given (the placement carries the questions), else by
        ``render_widget(name, options)``; with neither, an empty slot."""
        env: dict[str, Any] = {}
        if render_widget is not None:
            env["render_widget"] = render_widget
        if render_placement is not None:
            env["render_placement"] = render_placement
        md = self._parser()
        return Markup(md.renderer.render(self.tokens, md.options, env))

    @property
    def html(self) -> Markup:
        """The body with empty widget slots (cached)."""
        if self._html is None:
            self._html = self.render_body(None)
        return Markup(self._html)

    @property
    def ids(self) -> set[str]:
        """Every id the rendered page will carry (sections, headings, page blocks)."""
        found = {s.id for s in self.sections} | {f"{s.id}-title" for s in self.sections}
        if self.kind == "dive":
            found |= set(DIVE_PAGE_IDS)
        else:
            found.add("main")
        return found

    def links(self) -> list[str]:
        """Every href in the body, in order."""
        return [href for href, _ in body_links(self.tokens)]

    def _parser(self) -> MarkdownIt:
        if self.md is None:
            raise RuntimeError(f"{self.path} was built without its Markdown parser")
        return self.md


def body_links(tokens: list[Token]) -> list[tuple[str, int | None]]:
    """Every link of a body with the file line of its paragraph."""
    found = []
    for token in tokens:
        for child in token.children or []:
            if child.type == "link_open":
                found.append((str(child.attrGet("href") or ""), token.map[0] + 1 if token.map else None))
    return found
