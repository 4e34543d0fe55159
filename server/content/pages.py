"""A page of the course: ``index.md`` is ``/``, ``<hub>/index.md`` the hub ``/<hub>``,
``<hub>/<slug>.md`` a dive at ``/<hub>/<slug>``. ``load_page`` reads one: its place gives its kind
and URL, its front matter its fields (checked against its kind), its body its sections and placements."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from .directive import Placement
from .errors import ContentError, FrontMatterError
from .yaml_text import YamlError, YamlMap, load_yaml

CONTENT_DIR = Path(__file__).resolve().parents[2] / "site" / "content"
STATIC_DIR = Path(__file__).resolve().parents[2] / "site" / "static"

#: ids the dive template puts on every dive page, after the body sections
DIVE_PAGE_IDS = ("main", "pattern-and-implementation", "recap", "next", "references")

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TEXT_FIELDS = ("title", "lede", "kicker", "summary", "pattern", "implementation", "recap")
_FIELDS = {  # (required, optional) front matter fields of each kind of page
    "index": ({"title", "lede"}, {"kicker"}),
    "hub": ({"title", "lede", "order"}, {"kicker"}),
    "dive": ({"title", "lede", "order", "pattern", "implementation", "recap", "next", "sources"},
             {"kicker", "summary", "related", "course_last"}),
}

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


def load_page(md: MarkdownIt, root: Path, file: Path) -> Page:
    kind, path, hub_slug, slug = _place(root, file)
    meta, tokens = _parse(md, file)
    order = _checked_meta(file, kind, meta)
    heading = next((t for t in tokens if t.type == "heading_open" and t.tag == "h1"), None)
    if heading is not None:
        raise ContentError("the title comes from front matter; use '## ' headings",
                           path=file, line=heading.map[0] + 1 if heading.map else None)
    sections = [SectionLink(t.meta["id"], t.meta["title"]) for t in tokens if t.type == "dive_section_open"]
    if kind == "dive":
        clash = {s.id for s in sections} & set(DIVE_PAGE_IDS)
        if clash:
            raise ContentError(f"section ids {sorted(clash)} clash with the page's own blocks", path=file)
    placements = [t.meta["placement"] for t in tokens if t.type == "widget"]
    widgets = dict.fromkeys(p.name for p in placements)
    default_kicker = "Flows Lab" if kind == "index" else "Module" if kind == "hub" else ""
    return Page(
        path=path, kind=kind, source=file, meta=meta, title=meta["title"], lede=meta["lede"],
        kicker=meta.get("kicker", default_kicker), order=order, hub_slug=hub_slug, slug=slug,
        tokens=tokens, sections=sections, widgets=list(widgets), placements=placements, md=md,
    )


def _place(root: Path, file: Path) -> tuple[PageKind, str, str | None, str]:
    parts = file.relative_to(root).with_suffix("").parts
    place: tuple[PageKind, str, str | None, str]
    if parts == ("index",):
        place = "index", "/", None, ""
    elif len(parts) == 2 and parts[1] == "index":
        place = "hub", f"/{parts[0]}", None, parts[0]
    elif len(parts) == 2:
        place = "dive", f"/{parts[0]}/{parts[1]}", parts[0], parts[1]
    else:
        raise ContentError("content files live at index.md, <hub>/index.md or <hub>/<slug>.md", path=file)
    for part in parts:
        if part != "index" and not _SLUG.match(part):
            raise ContentError(f"{part!r} is not a URL slug (a-z, 0-9, '-')", path=file)
    return place


def _parse(md: MarkdownIt, file: Path) -> tuple[YamlMap, list[Token]]:
    text = file.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ContentError("a page opens with front matter between '---' lines", path=file, line=1)
    try:
        tokens = md.parse(text, {})
        front = next((t for t in tokens if t.type == "front_matter"), None)
        if front is None:
            raise ContentError("front matter is not closed with '---'", line=1)
        meta = parse_front_matter(front.content, first_line=2)  # right after the opening '---'
    except ContentError as exc:  # the parsers that find a problem do not know its file
        raise ContentError(exc.message, path=file, line=exc.line) from None
    return meta, [t for t in tokens if t.type != "front_matter"]


def parse_front_matter(text: str, first_line: int = 1) -> YamlMap:
    """The front matter as a mapping; ``first_line``: the file line the block starts on."""
    if "\t" in text:
        number = first_line + text[: text.index("\t")].count("\n")
        raise FrontMatterError("tabs are not allowed; indent with spaces", number)
    try:
        meta = load_yaml(text, first_line)
    except YamlError as exc:
        raise FrontMatterError(exc.message, exc.line) from None
    if meta is None:
        raise FrontMatterError("the front matter is empty", first_line)
    if not isinstance(meta, YamlMap):
        raise FrontMatterError("the front matter is a mapping of 'key: value' lines", first_line)
    return meta


def _checked_meta(file: Path, kind: str, meta: YamlMap) -> int:
    """The page's order, once its front matter has the fields its kind allows."""
    required, optional = _FIELDS[kind]
    missing = required - set(meta)
    unknown = set(meta) - required - optional
    if missing:
        raise ContentError(f"front matter lacks {sorted(missing)}", path=file, line=1)
    if unknown:
        first = min(unknown, key=meta.line_of)
        raise ContentError(f"front matter has unknown fields {sorted(unknown)}", path=file, line=meta.line_of(first))
    for name in _TEXT_FIELDS:
        if name in meta and not isinstance(meta[name], str):
            raise ContentError(f"{name} must be text", path=file, line=meta.line_of(name))
    if "order" not in meta:
        return 0
    if not str(meta["order"]).isdigit():
        raise ContentError(f"order must be a whole number, got {meta['order']!r}", path=file,
                           line=meta.line_of("order"))
    return int(meta["order"])


def normal_title(title: str) -> str:
    text = title.lower().replace("&", " and ")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text).split())
