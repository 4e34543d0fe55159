"""The static files' cache lifetimes, and the content-hashed URLs that let them be long.

A URL written through `static_url` carries its file's hash (`?v=`), so the browser keeps it a year.
Every other static URL (ES modules importing "./dom.js", @imports, /static/vendor/) has no hash to
change, so it is revalidated each time (304 on a matching ETag): never a stale module beside a fresh one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

HASHED = "public, max-age=31536000, immutable"
PLAIN = "no-cache"  # kept, but asked about again (ETag) before each use


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
