"""Render a page of the real course through the real templates and count its prose.

Issue 31 counts a dive's prose "outside widgets, listings, folded details and
navigation": every word the page's ``<main>`` shows a reader, less the
widgets (any element carrying ``data-widget``), the listings (``<figure>``),
folded ``<details>``, and navigation (``<nav>``, the pager). Headings, the
lede, tables, plain code blocks, the pattern, the recap and the references
all count. A word is a run of non-space characters, as ``wc -w`` counts the
seed pages; inline tags join their text to its neighbours (``<code>x</code>,``
is one word, as a reader sees it), block tags separate it.

The page is rendered with Jinja2 straight from ``site/templates`` (no app, no
Valkey): the widgets are empty slots, which the count leaves out anyway.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from server.content import Course, Page
from server.web.templating import static_url

ROOT = Path(__file__).resolve().parents[3]
TEMPLATES = ROOT / "site" / "templates"
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_BLOCK = {"address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "footer", "h1", "h2", "h3",
          "h4", "h5", "h6", "header", "hr", "li", "main", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul"}


def render_page(course: Course, page: Page) -> str:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]))
    env.globals["static_url"] = static_url(ROOT / "site" / "static")  # as create_app sets it
    template = {"index": "index.html", "hub": "hub.html", "dive": "dive.html"}[page.kind]
    hub = page.path if page.kind == "hub" else page.hub.path if page.hub else None
    return env.get_template(template).render(course=course, page=page, body=page.render_body(), current_hub=hub)


class ProseCounter(HTMLParser):
    """Words inside <main>, outside widgets, listings, folds and navigation."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self._stack: list[tuple[str, bool]] = []  # (tag, opens a part that is not prose)
        self._in_main = 0
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.text.append(" ")
        if tag in _VOID:
            return
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        skip = (
            tag in {"figure", "details", "nav", "script", "style"}
            or "data-widget" in found
            or "pager" in classes
        )
        self._stack.append((tag, skip))
        self._in_main += tag == "main"
        self._skipping += skip

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK:
            self.text.append(" ")
        while self._stack:
            opened, skip = self._stack.pop()
            self._skipping -= skip
            self._in_main -= opened == "main"
            if opened == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_main and not self._skipping:
            self.text.append(data)


def prose_words(html: str) -> int:
    counter = ProseCounter()
    counter.feed(html)
    counter.close()
    return len("".join(counter.text).split())
