"""A page of the course: ``index.md`` is ``/``, ``<hub>/index.md`` the hub ``/<hub>``,
``<hub>/<slug>.md`` a dive at ``/<hub>/<slug>`` (loaded by page_loader.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from .widget_directive import Placement
from .yaml_text import YamlMap

CONTENT_DIR = Path(__file__).resolve().parents[2] / "site" / "content"
STATIC_DIR = Path(__file__).resolve().parents[2] / "site" / "static"

#: ids the dive template puts on every dive page, after the body sections
DIVE_PAGE_IDS = ("main", "pattern-and-implementation", "recap", "next", "references")

RenderWidget = Callable[[str, dict[str, Any]], str]
PageKind = Literal["index", "hub", "dive"]


@dataclass(frozen=True)
class Link:
    """One entry of "next", "related" or "sources"."""

    title: str
    note: str = ""
    href: str | None = None  # None: plain text, the page is not in Flows Lab
    external: bool = False
    note_html: Markup = Markup("")  # noqa: RUF009 -- the note as inline Markdown; Markup is an immutable str


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
    meta: YamlMap  # the front matter, as parsed
    title: str
    lede: str
    kicker: str
    order: int
    hub_slug: str | None
    slug: str
    md: MarkdownIt = field(repr=False)  # the parser the page was read with, which renders it
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
    _inlined: dict[str, Markup] = field(default_factory=dict, init=False, repr=False)

    def inline(self, name: str) -> Markup:
        """A front matter text field as inline Markdown (raw HTML escaped): ``page.inline("recap")``;
        rendered once (a page never changes), not on each view."""
        if name not in self._inlined:
            text = self.lede if name == "lede" else str(self.meta.get(name, ""))
            self._inlined[name] = Markup(self.md.renderInline(text))
        return self._inlined[name]

    @property
    def lede_html(self) -> Markup:
        return self.inline("lede")

    @property
    def summary_html(self) -> Markup:
        return self.inline("summary") if self.meta.get("summary") else self.lede_html

    @property
    def description(self) -> str:
        """Its summary (else its lede) as one line of plain text."""
        text = str(self.meta.get("summary") or self.lede)
        return " ".join(text.replace("`", "").split())

    def render_body(self, render_widget: RenderWidget | None = None) -> Markup:
        """The body HTML, each widget drawn by ``render_widget(name, options)`` (else an empty slot)."""
        env: dict[str, Any] = {"render_widget": render_widget} if render_widget is not None else {}
        return Markup(self.md.renderer.render(self.tokens, self.md.options, env))

    @property
    def ids(self) -> set[str]:
        """Every id the rendered page will carry."""
        found = {s.id for s in self.sections} | {f"{s.id}-title" for s in self.sections}
        return found | (set(DIVE_PAGE_IDS) if self.kind == "dive" else {"main"})


def body_links(tokens: list[Token]) -> list[tuple[str, int | None]]:
    """Every link of a body with the file line of its paragraph."""
    return [(str(child.attrGet("href") or ""), token.map[0] + 1 if token.map else None)
            for token in tokens for child in token.children or [] if child.type == "link_open"]
