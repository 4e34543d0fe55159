"""HTML pages: the course index, the hubs, the dives, and the 404 page.

What the endpoints expect on ``request.app.state`` (set up by ``server.app``):

* ``course`` — a :class:`server.content.Course` (``Course.load(...)``);
* ``templates`` — a ``starlette.templating.Jinja2Templates`` on ``site/templates``;
* ``render_widget`` — optional, ``(name, options) -> str``: the HTML of one
  widget partial. Without it, each widget is an empty slot.

A page body does not depend on the visitor, so each one is rendered once and
kept in ``app.state.page_bodies`` (a dict: path -> HTML). Every page is whole
without JavaScript; a dive lists one ``/static/widgets/<name>.js`` module per
widget it uses, for the live part.

Mount ``routes()`` after the app's own routes (``/api/...``, ``/static``,
``/instructor``...): ``/{hub}`` and ``/{hub}/{slug}`` match any one- or two-part
path and answer 404 for anything that is not a page of the course. Register
the 404 page with ``exception_handlers=exception_handlers()``.
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
    cache: dict[str, Markup] | None = getattr(state, "page_bodies", None)
    if cache is None:
        cache = {}
        state.page_bodies = cache
    body = cache.get(page.path)
    if body is None:
        body = page.render_body(getattr(state, "render_widget", None))
        cache[page.path] = body
    return body


def _render(request: Request, template: str, page: Page | None, status: int = 200, **extra: Any) -> Response:
    course = getattr(request.app.state, "course", None)
    context: dict[str, Any] = {
        "course": course,
        "page": page,
        "body": _body(request, page) if page is not None else Markup(""),
        "current_hub": _hub_of(page),
        **extra,
    }
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


# Each page shows the visitor's progress beside its dives (the body stays cached:
# the progress is the page's frame, rendered per request).
async def index(request: Request) -> Response:
    return _render(request, "index.html", course_of(request).index, progress=await dive_progress(request))


async def hub(request: Request) -> Response:
    page = _page_of_kind(request, "hub")
    return _render(request, "hub.html", page, progress=await dive_progress(request))


async def dive(request: Request) -> Response:
    page = _page_of_kind(request, "dive")
    return _render(request, "dive.html", page, progress=await dive_progress(request))


async def not_found(request: Request, exc: Exception) -> Response:
    """The friendly 404 page; API paths get a short JSON answer instead."""
    detail = getattr(exc, "detail", "Not Found")
    if request.url.path.startswith("/api/"):
        return JSONAnswer({"error": detail}, status_code=404)
    return _render(request, "404.html", None, status=404)


FAVICON = Path(__file__).resolve().parents[3] / "site" / "static" / "favicon.svg"


async def favicon(request: Request) -> Response:
    """Browsers ask for /favicon.ico whatever the page says: answer with the site's icon."""
    return FileResponse(FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})


def routes() -> list[Route]:
    """The page routes; mount them after the app's own routes."""
    return [
        Route("/favicon.ico", favicon, name="favicon"),
        Route("/", index, name="index"),
        Route("/{hub:str}", hub, name="hub"),
        Route("/{hub:str}/{slug:str}", dive, name="dive"),
    ]


def exception_handlers() -> dict[int, Any]:
    """``Starlette(exception_handlers=...)``: the friendly 404 page."""
    return {404: not_found}
