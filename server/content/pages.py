"""A page of the course: one ``site/content/**/*.md`` file, parsed.

Files and URLs::

    site/content/index.md              ->  /                 (the course index)
    site/content/<hub>/index.md        ->  /<hub>            (a hub: flows, batches)
    site/content/<hub>/<slug>.md       ->  /<hub>/<slug>     (a dive)

Each file opens with front matter (grammar in :mod:`.frontmatter`). Fields:

==============  ======  =====================================================
field           pages   meaning
==============  ======  =====================================================
title           all     the page's h1
lede            all     one paragraph under the title (inline Markdown)
kicker          all     optional; a dive's default is "<Hub title> · dive NN"
order           hub,    a hub's place on the index / a dive's number in its
                dive    hub (an integer; also the "NN" of the kicker)
summary         dive    optional one line for lists (defaults to the lede)
pattern         dive    the pattern, one sentence (inline Markdown)
implementation  dive    the implementation, one sentence (inline Markdown)
recap           dive    the recap paragraph (inline Markdown)
next            dive    a link entry: what to read next
related         dive    list of link entries: "Related in this course"
sources         dive    list of sources: title, href (http/https), note
==============  ======  =====================================================

A *link entry* is a mapping with ``note`` and one of:

* ``page: /flows/cross-queue`` — a page of this site; it must exist (loading
  fails otherwise), and its title is used unless ``title`` is given;
* ``href: https://…`` with ``title`` — an external page;
* ``title`` alone — resolved against the site's page titles; when no page
  matches, it is shown as plain text marked "(not in Flows Lab)", never as a
  link.

Loading checks every internal link of every body: it must name a page of the
course (and, with a ``#fragment``, an id on that page). Navigation (hub
listing, previous/next) comes from ``order``, never from lists kept in
templates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from .errors import ContentError
from .frontmatter import parse_front_matter

CONTENT_DIR = Path(__file__).resolve().parents[2] / "site" / "content"
STATIC_DIR = Path(__file__).resolve().parents[2] / "site" / "static"

#: ids the dive template puts on every dive page, after the body sections
DIVE_PAGE_IDS = ("main", "pattern-and-implementation", "recap", "next", "references")

RenderWidget = Callable[[str, dict[str, Any]], str]
PageKind = Literal["index", "hub", "dive"]

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FIELDS = {
    "index": ({"title", "lede"}, {"kicker"}),
    "hub": ({"title", "lede", "order"}, {"kicker"}),
    "dive": (
        {"title", "lede", "order", "pattern", "implementation", "recap", "next", "sources"},
        {"kicker", "summary", "related"},
    ),
}


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
    next: Link | None = None
    related: list[Link] = field(default_factory=list)
    sources: list[Link] = field(default_factory=list)
    # set by the Course once every page is loaded
    hub: Page | None = field(default=None, repr=False)
    dives: list[Page] = field(default_factory=list, repr=False)  # a hub's dives
    prev_page: Page | None = field(default=None, repr=False)
    next_page: Page | None = field(default=None, repr=False)
    _md: MarkdownIt | None = field(default=None, repr=False)
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
        return self.meta.get("summary") or self.lede

    def inline(self, name: str) -> Markup:
        """A front matter text field rendered as inline Markdown (raw HTML
        stays escaped), ready for a template: ``page.inline("recap")``."""
        text = self.lede if name == "lede" else str(self.meta.get(name, ""))
        assert self._md is not None
        return Markup(self._md.renderInline(text))

    @property
    def lede_html(self) -> Markup:
        return self.inline("lede")

    @property
    def summary_html(self) -> Markup:
        return self.inline("summary") if self.meta.get("summary") else self.lede_html

    # -- body ----------------------------------------------------------------
    def render_body(self, render_widget: RenderWidget | None = None) -> Markup:
        """The body HTML. Widgets are drawn by ``render_widget(name, options)``
        (the app's partials); without it each widget is an empty slot."""
        assert self._md is not None
        env: dict[str, Any] = {}
        if render_widget is not None:
            env["render_widget"] = render_widget
        return Markup(self._md.renderer.render(self.tokens, self._md.options, env))

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
        return [href for href, _ in _body_links(self.tokens)]


# -- loading one file ----------------------------------------------------------
def _load_page(md: MarkdownIt, root: Path, file: Path) -> Page:
    kind, path, hub_slug, slug = _place(root, file)
    meta, tokens = _parse(md, file)
    order = _checked_meta(file, kind, meta)
    if any(t.type == "heading_open" and t.tag == "h1" for t in tokens):
        raise ContentError(f"{file}: the title comes from front matter; use '## ' headings")
    sections = [
        SectionLink(t.meta["id"], t.meta["title"]) for t in tokens if t.type == "dive_section_open"
    ]
    if kind == "dive":
        clash = {s.id for s in sections} & set(DIVE_PAGE_IDS)
        if clash:
            raise ContentError(f"{file}: section ids {sorted(clash)} clash with the page's own blocks")
    widgets = dict.fromkeys(t.meta["name"] for t in tokens if t.type == "widget")
    default_kicker = "Flows Lab" if kind == "index" else "Module" if kind == "hub" else ""
    return Page(
        path=path, kind=kind, source=file, meta=meta, title=meta["title"], lede=meta["lede"],
        kicker=meta.get("kicker", default_kicker), order=order, hub_slug=hub_slug, slug=slug,
        tokens=tokens, sections=sections, widgets=list(widgets), _md=md,
    )


def _place(root: Path, file: Path) -> tuple[PageKind, str, str | None, str]:
    """(kind, URL path, hub slug, slug) of a content file, from where it lies."""
    parts = file.relative_to(root).with_suffix("").parts
    place: tuple[PageKind, str, str | None, str]
    if parts == ("index",):
        place = "index", "/", None, ""
    elif len(parts) == 2 and parts[1] == "index":
        place = "hub", f"/{parts[0]}", None, parts[0]
    elif len(parts) == 2:
        place = "dive", f"/{parts[0]}/{parts[1]}", parts[0], parts[1]
    else:
        raise ContentError(f"{file}: content files live at index.md, <hub>/index.md or <hub>/<slug>.md")
    for part in parts:
        if part != "index" and not _SLUG.match(part):
            raise ContentError(f"{file}: {part!r} is not a URL slug (a-z, 0-9, '-')")
    return place


def _parse(md: MarkdownIt, file: Path) -> tuple[dict[str, Any], list[Token]]:
    """The front matter and the body tokens of a content file."""
    text = file.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ContentError(f"{file}: a page opens with front matter between '---' lines")
    try:
        tokens = md.parse(text, {})
    except ContentError as exc:
        raise ContentError(f"{file}: {exc}") from None
    front = next((t for t in tokens if t.type == "front_matter"), None)
    if front is None:
        raise ContentError(f"{file}: front matter is not closed with '---'")
    try:
        meta = parse_front_matter(front.content)
    except ContentError as exc:
        raise ContentError(f"{file}: {exc}") from None
    return meta, [t for t in tokens if t.type != "front_matter"]


def _checked_meta(file: Path, kind: str, meta: dict[str, Any]) -> int:
    """The page's order, once its front matter has exactly the fields its kind allows."""
    required, optional = _FIELDS[kind]
    missing = required - set(meta)
    unknown = set(meta) - required - optional
    if missing:
        raise ContentError(f"{file}: front matter lacks {sorted(missing)}")
    if unknown:
        raise ContentError(f"{file}: front matter has unknown fields {sorted(unknown)}")
    for name in ("title", "lede", "kicker", "summary", "pattern", "implementation", "recap"):
        if name in meta and not isinstance(meta[name], str):
            raise ContentError(f"{file}: {name} must be text")
    if "order" not in meta:
        return 0
    if not str(meta["order"]).isdigit():
        raise ContentError(f"{file}: order must be a whole number, got {meta['order']!r}")
    return int(meta["order"])


def _as_list(page: Page, meta: dict[str, Any], name: str) -> list[Any]:
    value = meta.get(name, [])
    if not isinstance(value, list):
        raise ContentError(f"{page.source}: {name} must be a list of entries")
    return value


def _body_links(tokens: list[Token]) -> list[tuple[str, int | None]]:
    found = []
    for token in tokens:
        for child in token.children or []:
            if child.type == "link_open":
                found.append((str(child.attrGet("href") or ""), token.map[0] + 1 if token.map else None))
    return found


def _normal_title(title: str) -> str:
    text = title.lower().replace("&", " and ")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())
