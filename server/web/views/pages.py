"""HTML pages: the course index, the hubs, the dives, and the 404 page.

A page body does not depend on the visitor, so each is rendered once and kept
in `app.state.page_bodies`. `routes()` match any one- or two-part path: mount
them after the app's own routes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from server.content import Page
from server.web.answer import JSONAnswer
from server.web.templating import course_of, respond
from server.web.views.progress import dive_progress


def _body(request: Request, page: Page) -> Markup:
    state = request.app.state
    if not hasattr(state, "page_bodies"):
        state.page_bodies = {}
    cache: dict[str, Markup] = state.page_bodies
    if page.path not in cache:
        cache[page.path] = page.render_body(getattr(state, "render_widget", None))
    return cache[page.path]


def _render(request: Request, template: str, page: Page | None, status: int = 200, **extra: Any) -> Response:
    context = {"page": page, "body": _body(request, page) if page is not None else Markup(""),
               "current_hub": _hub_of(page), **extra}
    return respond(request, template, context, status)


def _hub_of(page: Page | None) -> str | None:
    if page is None:
        return None
    if page.kind == "hub":
        return page.path
    if page.kind == "dive" and page.hub is not None:
        return page.hub.path
    return None


def _page_of_kind(request: Request, kind: str) -> Page:
    page = course_of(request).page(request.url.path)
    if page is None or page.kind != kind or page.path != request.url.path:
        raise HTTPException(status_code=404)
    return page


# The progress beside the dives is the page's frame, rendered per request (the body stays cached).
async def index(request: Request) -> Response:
    return _render(request, "index.html", course_of(request).index, progress=await dive_progress(request))


async def hub(request: Request) -> Response:
    page = _page_of_kind(request, "hub")
    return _render(request, "hub.html", page, progress=await dive_progress(request))


async def dive(request: Request) -> Response:
    page = _page_of_kind(request, "dive")
    return _render(request, "dive.html", page, progress=await dive_progress(request))


async def not_found(request: Request, exc: Exception) -> Response:
    detail = getattr(exc, "detail", "Not Found")
    if request.url.path.startswith("/api/"):
        return JSONAnswer({"error": detail}, status_code=404)
    return _render(request, "404.html", None, status=404)


FAVICON = Path(__file__).resolve().parents[3] / "site" / "static" / "favicon.svg"


async def favicon(request: Request) -> Response:
    """Browsers ask for /favicon.ico whatever the page says."""
    return FileResponse(FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})


def routes() -> list[Route]:
    return [
        Route("/favicon.ico", favicon, name="favicon"),
        Route("/", index, name="index"),
        Route("/{hub:str}", hub, name="hub"),
        Route("/{hub:str}/{slug:str}", dive, name="dive"),
    ]


def exception_handlers() -> dict[int, Any]:
    return {404: not_found}
