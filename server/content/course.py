"""The course: every page loaded once, linked and cross-checked (dives numbered, entries resolved,
internal links checked), so a broken course stops the start naming the file and line."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from .directive import Placement, widget_plugin
from .errors import ContentError
from .listing_directive import REPO_ROOT, listing_plugin
from .pages import CONTENT_DIR, STATIC_DIR, Link, Page, body_links, load_page, normal_title
from .sections import sections_plugin

#: raises ContentError when the placement asks what its widget cannot do
CheckPlacement = Callable[[Page, Placement], None]


def make_markdown(known_widgets: Iterable[str] | None = None, scripts: Path | None = None, *,
                  sections: bool = True, host: Path = REPO_ROOT) -> MarkdownIt:
    """The one Markdown parser: CommonMark with raw HTML off (a typed ``<script>`` comes out as text),
    GFM tables, h2 anchors, front matter, and the course's directives."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.use(front_matter_plugin)
    md.use(widget_plugin, known=known_widgets)
    md.use(listing_plugin, scripts=scripts, host=host)
    md.use(anchors_plugin, min_level=2, max_level=2)
    if sections:
        md.use(sections_plugin)
    return md


class Course:
    def __init__(self, pages: Iterable[Page]) -> None:
        self.pages: dict[str, Page] = {p.path: p for p in pages}
        if "/" not in self.pages:
            raise ContentError("site/content/index.md is missing")
        self.index: Page = self.pages["/"]
        self.hubs: list[Page] = sorted((p for p in self.pages.values() if p.kind == "hub"), key=lambda p: p.order)
        self._link_hubs()
        # a dive marked `course_last` closes the course whatever its hub (dive 05 lives in Flows)
        self.dives: list[Page] = sorted((d for hub in self.hubs for d in hub.dives),
                                        key=lambda d: bool(d.meta.get("course_last")))
        self._number_dives()
        for page in self.pages.values():
            self._resolve_entries(page)
            for href, line in body_links(page.tokens):
                if problem := self.broken_link(page, href):
                    raise ContentError(f"link {href!r}: {problem}", path=page.source, line=line)
        self._check_questions_declared_once()

    @classmethod
    def load(cls, content_dir: str | Path = CONTENT_DIR, *, known_widgets: Iterable[str] | None = None,
             scripts: Path | None = None) -> Course:
        """Every ``*.md`` under ``content_dir``; ``None``: any widget name, the registry's scripts."""
        root = Path(content_dir)
        md = make_markdown(known_widgets, scripts)
        files = sorted(root.rglob("*.md"))
        if not files:
            raise ContentError(f"no Markdown files under {root}")
        return cls(load_page(md, root, path) for path in files)

    def page(self, path: str) -> Page | None:
        """The page at URL ``path`` ("/flows/" and "/flows" are the same page)."""
        return self.pages.get("/" + path.strip("/"))

    def placements(self) -> Iterator[tuple[Page, Placement]]:
        """Every ``{widget}`` fence with its page: the index, the hubs, then the dives."""
        for page in [self.index, *self.hubs, *self.dives]:
            for placement in page.placements:
                yield page, placement

    def check_placements(self, check: CheckPlacement) -> None:
        """Run ``check`` on every placement; its ContentError comes back naming the file (and line)."""
        for page, placement in self.placements():
            try:
                check(page, placement)
            except ContentError as exc:
                line = exc.line if exc.line is not None else placement.line
                raise ContentError(exc.message, path=page.source, line=line) from None

    def _link_hubs(self) -> None:
        hubs = {h.slug: h for h in self.hubs}
        grouped: dict[str, list[Page]] = {slug: [] for slug in hubs}
        for page in (p for p in self.pages.values() if p.kind == "dive"):
            if page.hub_slug not in hubs:
                raise ContentError(f"dive has no hub (site/content/{page.hub_slug}/index.md)", path=page.source)
            grouped[page.hub_slug].append(page)
        for slug, dives in grouped.items():
            dives.sort(key=lambda d: d.order)
            orders = [d.order for d in dives]
            if len(set(orders)) != len(orders):
                raise ContentError(f"hub {slug!r}: two dives share one order: {orders}")
            hubs[slug].dives = dives
            for dive in dives:
                dive.hub = hubs[slug]

    def _number_dives(self) -> None:
        # One sequence for the whole course: the last dive of a hub leads to the next hub's first.
        for position, dive in enumerate(self.dives):
            dive.number = position + 1
            if "kicker" not in dive.meta and dive.hub is not None:
                dive.kicker = f"{dive.hub.title} · dive {dive.number:02d}"
            dive.prev_page = self.dives[position - 1] if position > 0 else None
            dive.next_page = self.dives[position + 1] if position + 1 < len(self.dives) else None

    def _check_questions_declared_once(self) -> None:
        # A widget's actions are one API for the whole site: its questions are written once.
        declared: dict[str, tuple[Page, Placement]] = {}
        for page, placement in self.placements():
            if not placement.questions:
                continue
            if placement.name in declared:
                first_page, first = declared[placement.name]
                raise ContentError(
                    f"questions for {placement.name!r} are declared again "
                    f"(first at {first_page.source}:{first.line}); declare them once",
                    path=page.source, line=placement.line,
                )
            declared[placement.name] = (page, placement)

    def _entry(self, page: Page, raw: Any, where: str) -> Link:
        def problem(message: str) -> ContentError:
            return ContentError(f"{where}: {message}", path=page.source, line=getattr(raw, "line", None))

        if not isinstance(raw, dict):
            raise problem(f"entries are mappings, got {raw!r}")
        unknown = set(raw) - {"page", "href", "title", "note"}
        if unknown:
            raise problem(f"entry has unknown key {sorted(unknown)}")
        if not all(isinstance(value, str) for value in raw.values()):
            raise problem("an entry's page, href, title and note are text")
        note = raw.get("note", "")
        html = Markup(page.md.renderInline(note)) if note else Markup("")
        if "page" in raw:
            if "href" in raw:
                raise problem("entry has both page and href")
            target = self.page(raw["page"])
            if target is None or raw["page"] != target.path:
                raise problem(f"{raw['page']!r} is not a page of the course")
            return Link(raw.get("title", target.title), note, target.path, note_html=html)
        if "title" not in raw:
            raise problem("entry needs a page, or a title")
        if "href" in raw:
            href = raw["href"]
            if not href.startswith(("https://", "http://")):
                raise problem(f"href must be http(s), got {href!r}")
            return Link(raw["title"], note, href, external=True, note_html=html)
        wanted = normal_title(raw["title"])
        target = next((p for p in self.pages.values() if normal_title(p.title) == wanted), None)
        return Link(raw["title"], note, target.path if target is not None else None, note_html=html)

    def _resolve_entries(self, page: Page) -> None:
        if "next" in page.meta:
            page.next = self._entry(page, page.meta["next"], "next")
        page.related = [self._entry(page, e, "related") for e in _listed(page, "related")]
        page.sources = []
        for raw in _listed(page, "sources"):
            if not isinstance(raw, dict) or set(raw) - {"title", "href", "note"} or "href" not in raw:
                raise ContentError(f"a source needs title, href and note: {raw!r}",
                                   path=page.source, line=getattr(raw, "line", None))
            page.sources.append(self._entry(page, raw, "sources"))  # with an href and no page: external

    def broken_link(self, page: Page, href: str) -> str | None:
        """Why ``href`` (found on ``page``) would be a dead link, or ``None``."""
        if href.startswith(("https://", "http://", "mailto:")):
            return None
        if href.startswith("#"):
            return None if href[1:] in page.ids else "no such id on this page"
        if not href.startswith("/") or href.startswith("//"):
            return "internal links are root-relative (start with a single '/')"
        path, _, fragment = href.partition("#")
        path = path.split("?", 1)[0]
        if path.startswith("/static/"):
            return None if (STATIC_DIR / path[len("/static/") :]).is_file() else "no such file"
        target = self.page(path)
        if target is None or target.path != path:
            return "no such page"
        if fragment and fragment not in target.ids:
            return f"no id {fragment!r} on {path}"
        return None


def _listed(page: Page, name: str) -> list[Any]:
    value = page.meta.get(name, [])
    if not isinstance(value, list):
        raise ContentError(f"{name} must be a list of entries", path=page.source, line=page.meta.line_of(name))
    return value


load_course = Course.load  # what server.app calls at start-up
