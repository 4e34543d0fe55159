"""The course: every page loaded once, linked together and cross-checked.

Hubs list their dives by ``order``; each dive learns its hub, kicker and
previous/next; ``next``, ``related`` and ``sources`` entries are resolved to
links (a related page Flows Lab does not have becomes plain text, never a dead
link); and every internal link of every body must name a page (and id) that
exists. The front matter fields and the link-entry grammar are described in
:mod:`.pages`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from markupsafe import Markup

from .errors import ContentError
from .markdown import make_markdown
from .pages import CONTENT_DIR, STATIC_DIR, Link, Page, _as_list, _body_links, _load_page, _normal_title
from .scripts import ScriptSource


class Course:
    """Every page of the site, loaded and cross-checked once."""

    def __init__(self, pages: Iterable[Page]) -> None:
        self.pages: dict[str, Page] = {p.path: p for p in pages}
        if "/" not in self.pages:
            raise ContentError("site/content/index.md is missing")
        self.index: Page = self.pages["/"]
        self.hubs: list[Page] = sorted(
            (p for p in self.pages.values() if p.kind == "hub"), key=lambda p: p.order
        )
        self._link_hubs()
        self.dives: list[Page] = [d for hub in self.hubs for d in hub.dives]
        for page in self.pages.values():
            self._resolve_entries(page)
            self._check_links(page)

    # -- public API ----------------------------------------------------------
    @classmethod
    def load(
        cls,
        content_dir: str | Path = CONTENT_DIR,
        *,
        known_widgets: Iterable[str] | None = None,
        scripts: ScriptSource | None = None,
    ) -> Course:
        """Parse every ``*.md`` under ``content_dir``. ``known_widgets`` is the
        app's set of widget names (``None``: accept any); ``scripts`` is where
        listings read Lua (default: the host library's registry)."""
        root = Path(content_dir)
        md = make_markdown(known_widgets, scripts)
        files = sorted(root.rglob("*.md"))
        if not files:
            raise ContentError(f"no Markdown files under {root}")
        return cls(_load_page(md, root, path) for path in files)

    def page(self, path: str) -> Page | None:
        """The page at URL ``path`` ("/flows/" and "/flows" are the same page)."""
        clean = "/" + path.strip("/")
        return self.pages.get(clean)

    @property
    def widget_names(self) -> list[str]:
        """Every widget any page uses, each once, in course order."""
        seen: dict[str, None] = {}
        for page in [self.index, *self.hubs, *self.dives]:
            for name in page.widgets:
                seen.setdefault(name)
        return list(seen)

    # -- building ------------------------------------------------------------
    def _link_hubs(self) -> None:
        hubs = {h.slug: h for h in self.hubs}
        grouped: dict[str, list[Page]] = {slug: [] for slug in hubs}
        for page in self.pages.values():
            if page.kind != "dive":
                continue
            if page.hub_slug not in hubs:
                raise ContentError(
                    f"{page.source}: dive has no hub (site/content/{page.hub_slug}/index.md)"
                )
            grouped[page.hub_slug].append(page)
        for slug, dives in grouped.items():
            hub = hubs[slug]
            dives.sort(key=lambda d: d.order)
            orders = [d.order for d in dives]
            if len(set(orders)) != len(orders):
                raise ContentError(f"hub {slug!r}: two dives share one order: {orders}")
            hub.dives = dives
            for position, dive in enumerate(dives):
                dive.hub = hub
                if "kicker" not in dive.meta:
                    dive.kicker = f"{hub.title} · dive {dive.order:02d}"
                dive.prev_page = dives[position - 1] if position > 0 else None
                dive.next_page = dives[position + 1] if position + 1 < len(dives) else None

    def _find_by_title(self, title: str) -> Page | None:
        wanted = _normal_title(title)
        for page in self.pages.values():
            if _normal_title(page.title) == wanted:
                return page
        return None

    def _entry(self, page: Page, raw: Any, where: str) -> Link:
        link = self._bare_entry(page, raw, where)
        assert page._md is not None
        note_html = Markup(page._md.renderInline(link.note)) if link.note else Markup("")
        return Link(link.title, link.note, link.href, link.external, note_html)

    def _bare_entry(self, page: Page, raw: Any, where: str) -> Link:
        if not isinstance(raw, dict):
            raise ContentError(f"{page.source}: {where} entries are mappings, got {raw!r}")
        unknown = set(raw) - {"page", "href", "title", "note"}
        if unknown:
            raise ContentError(f"{page.source}: {where} entry has unknown key {sorted(unknown)}")
        note = raw.get("note", "")
        if "page" in raw:
            if "href" in raw:
                raise ContentError(f"{page.source}: {where} entry has both page and href")
            target = self.page(raw["page"])
            if target is None or raw["page"] != target.path:
                raise ContentError(
                    f"{page.source}: {where} names {raw['page']!r}, which is not a page of the course"
                )
            return Link(raw.get("title", target.title), note, target.path)
        if "title" not in raw:
            raise ContentError(f"{page.source}: {where} entry needs a page, or a title")
        if "href" in raw:
            href = raw["href"]
            if not href.startswith(("https://", "http://")):
                raise ContentError(f"{page.source}: {where} href must be http(s), got {href!r}")
            return Link(raw["title"], note, href, external=True)
        target = self._find_by_title(raw["title"])
        if target is not None:
            return Link(raw["title"], note, target.path)
        return Link(raw["title"], note, None)

    def _resolve_entries(self, page: Page) -> None:
        meta = page.meta
        if "next" in meta:
            page.next = self._entry(page, meta["next"], "next")
        page.related = [self._entry(page, e, "related") for e in _as_list(page, meta, "related")]
        page.sources = []
        for raw in _as_list(page, meta, "sources"):
            if not isinstance(raw, dict) or set(raw) - {"title", "href", "note"} or "href" not in raw:
                raise ContentError(f"{page.source}: a source needs title, href and note: {raw!r}")
            link = self._entry(page, raw, "sources")
            if not link.external:
                raise ContentError(f"{page.source}: a source must be an external page: {raw!r}")
            page.sources.append(link)

    def _check_links(self, page: Page) -> None:
        for href, line in _body_links(page.tokens):
            problem = self.broken_link(page, href)
            if problem:
                raise ContentError(f"{page.source}:{line}: link {href!r}: {problem}")

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


def load_course(
    content_dir: str | Path = CONTENT_DIR,
    *,
    known_widgets: Iterable[str] | None = None,
    scripts: ScriptSource | None = None,
) -> Course:
    """``Course.load`` as a function (what ``server.app`` calls at start-up)."""
    return Course.load(content_dir, known_widgets=known_widgets, scripts=scripts)
