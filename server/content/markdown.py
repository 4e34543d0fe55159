"""The one Markdown parser: CommonMark with raw HTML off (a typed ``<script>`` comes out as text),
GFM tables, h2 anchors, front matter, and the course's directives."""

from __future__ import annotations

from collections.abc import Iterable

from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from .host_code import HostFiles
from .listing_directive import listing_plugin
from .scripts import ScriptSource
from .sections import sections_plugin
from .widget_directive import widget_plugin


def make_markdown(known_widgets: Iterable[str] | None = None, scripts: ScriptSource | None = None, *,
                  sections: bool = True, host: HostFiles | None = None) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.use(front_matter_plugin)
    md.use(widget_plugin, known=known_widgets)
    md.use(listing_plugin, scripts=scripts, host=host)
    md.use(anchors_plugin, min_level=2, max_level=2)
    if sections:
        md.use(sections_plugin)
    return md
