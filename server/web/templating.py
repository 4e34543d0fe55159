"""Pages from templates: the one base layout, each widget's partial, and the files they link.

A dive's body is the same for every visitor and is rendered once; each widget in it is a marker
filled per visitor with the widget's HTML, drawn from its snapshot (`views/widgets.py` `fill`).

A URL written through `static_url` carries its file's hash (`?v=`), so the browser keeps it a year.
Every other static URL (ES modules importing "./dom.js", @imports, /static/vendor/) has no hash to
change, so it is revalidated each time (304 on a matching ETag): never a stale module beside a fresh one.

The exercises' editor is CodeMirror 6 (with its Lua mode), served under /static/vendor/ as its packages
publish it (site/package-lock.json, no build step): ES modules importing each other by bare name, mapped
to files by an inline import map. The CSP (`script-src 'self'`) allows that one inline script by its
SHA-256 (`CSP_SOURCE`), computed from exactly `EDITOR_MAP`'s text, so the two cannot drift apart.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, Final

from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import Scope

from server.web import guards
from server.web.services import services
from server.widgets.snapshot import Catalog

# The partials of what is not a widget (the console, the exercises): name -> options -> context.
Extra = Callable[[dict[str, Any]], dict[str, Any]]
MARKER = re.compile(r"<!--emqlab-widget:([a-z0-9-]+)-->")  # where a widget goes in a cached body
HASHED = "public, max-age=31536000, immutable"
PLAIN = "no-cache"  # kept, but asked about again (ETag) before each use
VENDOR: Final = "/static/vendor"
# bare name -> the package's ES module entry (its package.json "exports" import)
ENTRIES: Final = {
    "codemirror": "codemirror/dist/index.js",
    "@codemirror/autocomplete": "@codemirror/autocomplete/dist/index.js",
    "@codemirror/commands": "@codemirror/commands/dist/index.js",
    "@codemirror/language": "@codemirror/language/dist/index.js",
    "@codemirror/lint": "@codemirror/lint/dist/index.js",
    "@codemirror/search": "@codemirror/search/dist/index.js",
    "@codemirror/state": "@codemirror/state/dist/index.js",
    "@codemirror/streamparser": "@codemirror/streamparser/dist/index.js",
    "@codemirror/view": "@codemirror/view/dist/index.js",
    "@lezer/common": "@lezer/common/dist/index.js",
    "@lezer/highlight": "@lezer/highlight/dist/index.js",
    "@marijn/find-cluster-break": "@marijn/find-cluster-break/src/index.js",
    "crelt": "crelt/index.js",
    "style-mod": "style-mod/src/style-mod.js",
    "w3c-keyname": "w3c-keyname/index.js",
    # the Lua mode (the package exports its modes as "./mode/*")
    "@codemirror/legacy-modes/mode/lua": "@codemirror/legacy-modes/mode/lua.js",
}
MAP_TEXT: Final = json.dumps({"imports": {name: f"{VENDOR}/{path}" for name, path in ENTRIES.items()}},
                             separators=(",", ":"), sort_keys=True)
EDITOR_MAP: Final = Markup(f'<script type="importmap">{MAP_TEXT}</script>')
CSP_SOURCE: Final = "'sha256-" + base64.b64encode(hashlib.sha256(MAP_TEXT.encode()).digest()).decode() + "'"


def respond(request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
    """`in_class`: a class's learner, so a page without widgets still follows the class (lab.js)."""
    templates = services(request).templates
    in_class = services(request).cookies.room.read(request) is not None and not guards.is_instructor(request)
    frame = {"in_class": in_class, "course": services(request).course, "page": None, "current_hub": None}
    return templates.TemplateResponse(request, template, {**frame, **context}, status_code=status)


def renderer(templates: Jinja2Templates, catalog: Catalog,
             extras: dict[str, Extra]) -> Callable[[str, dict[str, Any]], str]:
    """`(name, options) -> HTML` for the Markdown's `{widget}` directive: a widget is a marker (`MARKER`)."""
    templates.env.globals.setdefault("editor_import_map", EDITOR_MAP)  # a page with an exercise

    def render(name: str, options: dict[str, Any] | None = None) -> str:
        if name in extras:
            return Markup(templates.get_template(f"widgets/_{name}.html").render(extras[name](options or {})))
        widget = catalog.widgets.get(name)
        if widget is None:
            return Markup(f'<div class="widget-slot" data-widget-missing="{escape(name)}"></div>')
        return Markup(f"<!--emqlab-widget:{widget.name}-->")

    return render


class CachedStatic(StaticFiles):
    """StaticFiles answering with a Cache-Control: a year when the URL names the content, else revalidate."""

    def file_response(self, full_path: str | os.PathLike[str], stat_result: os.stat_result, scope: Scope,
                      status_code: int = 200) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        hashed = any(part.startswith(b"v=") for part in scope.get("query_string", b"").split(b"&"))
        response.headers["Cache-Control"] = HASHED if hashed else PLAIN
        return response


def static_url(root: Path) -> Callable[[str], str]:
    """The templates' `static_url("site.css")`: /static/site.css?v=<its content hash>.
    Files ship with the code, so each is hashed once per process."""

    @cache
    def url(path: str) -> str:
        digest = hashlib.sha256((root / path).read_bytes()).hexdigest()[:12]
        return f"/static/{path}?v={digest}"

    return url
