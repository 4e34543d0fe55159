"""Pages from templates: the one base layout, and each widget's partial.

A dive's body is the same for every visitor and is rendered once; each widget in it is a marker
filled per visitor with the widget's HTML, drawn from its snapshot (`views/widgets.py` `fill`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from server.content import Course
from server.web import editor_assets, guards
from server.web.services import services
from server.widgets.snapshot import Catalog

# The partials of what is not a widget (the console, the exercises): name -> options -> context.
Extra = Callable[[dict[str, Any]], dict[str, Any]]


def course_of(request: Request) -> Course:
    return services(request).course


def respond(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    """`in_class`: a class's learner, so a page without widgets still follows the class (room-follow.js)."""
    templates = services(request).templates
    in_class = services(request).cookies.room.read(request) is not None and not guards.is_instructor(request)
    frame = {"in_class": in_class, "course": course_of(request), "page": None, "current_hub": None}
    return templates.TemplateResponse(request, template, {**frame, **context}, status_code=status)


def marker(name: str) -> str:
    """Where a widget goes in a cached body: filled per visitor with its drawn HTML."""
    return f"<!--emqlab-widget:{name}-->"


MARKER = re.compile(r"<!--emqlab-widget:([a-z0-9-]+)-->")


def renderer(templates: Jinja2Templates, catalog: Catalog,
             extras: dict[str, Extra]) -> Callable[[str, dict[str, Any]], str]:
    """`(name, options) -> HTML` for the Markdown's `{widget}` directive."""
    templates.env.globals.setdefault("editor_import_map", editor_assets.TAG)  # a page with an exercise

    def render(name: str, options: dict[str, Any] | None = None) -> str:
        if name in extras:
            return Markup(templates.get_template(f"widgets/_{name}.html").render(extras[name](options or {})))
        widget = catalog.widgets.get(name)
        if widget is None:
            return Markup(f'<div class="widget-slot" data-widget-missing="{escape(name)}"></div>')
        return Markup(marker(widget.name))

    return render
