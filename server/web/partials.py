"""Render a widget's template partial (`site/templates/widgets/_<name>.html`).

The partial is the widget's markup: its region, its buttons, and for a
stepper the script listing, read from the file the server runs. It carries no
visitor's state: the live keys arrive from `/api/widgets/<name>/state` and
the stream, so a rendered page is the same for every visitor and can be
cached. It does carry the widget's static trace (`server/widgets/traces.py`): a
recorded run of its tour on Valkey, the widget as a table of states for a
reader without JavaScript.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape
from starlette.templating import Jinja2Templates

from server.console import page as console_page
from server.emq import registry
from server.widgets import WIDGETS, traces


@dataclass
class ListingLine:
    number: int
    text: str
    move: int | None


def listing_lines(script: str) -> list[ListingLine]:
    """The script's lines, each tagged with the move it belongs to (if any)."""
    lines = registry.script_source(script).splitlines()
    owner: dict[int, int] = {}
    for move in registry.moves(script):
        for n in range(move.first_line, move.last_line + 1):
            owner[n] = move.number
    return [ListingLine(i, text, owner.get(i)) for i, text in enumerate(lines, 1)]


def key_breaks(name: str) -> Markup:
    """A key name that may wrap only after ":" and "}" (as lab.js keyName does)."""
    pieces = re.split(r"(?<=[:}])", name)
    return Markup("<wbr>").join(escape(piece) for piece in pieces if piece)


def renderer(templates: Jinja2Templates) -> Callable[[str, dict[str, Any]], str]:
    templates.env.filters.setdefault("key_breaks", key_breaks)

    def render(name: str, options: dict[str, Any] | None = None) -> str:
        widget = WIDGETS.get(name)
        if name == console_page.NAME:  # not a stepper: its own partial and script (server/console/)
            return Markup(templates.get_template("widgets/_console.html").render(console_page.context(options or {})))
        if widget is None:
            return Markup(f'<div class="widget-slot" data-widget-missing="{name}"></div>')
        template = templates.get_template(f"widgets/_{name}.html")
        # Only the console reads its directive's options (try-N); a stepper's partial reads none.
        context: dict[str, Any] = {"widget": widget, "trace": traces.current(name)}
        script = getattr(widget, "script", None)
        if script:
            context["script"] = script
            path = registry.script_path(script)
            context["script_path"] = path.relative_to(path.parents[3]).as_posix()
            context["lines"] = listing_lines(script)
            context["moves"] = registry.moves(script)
        return Markup(template.render(context))

    return render
