"""Wiring: settings, Valkey, templates, routes and middleware. Nothing else."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import redis
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from server import settings as settings_module
from server.console import client as console_client
from server.console import page as console_page
from server.content import load_course
from server.emq import registry
from server.live import presence
from server.live.hub import Hub, enable_notifications
from server.sandboxes.lifecycle import Reaper
from server.sandboxes.rooms import ROOM_COOKIE, WATCH_COOKIE
from server.sandboxes.sandbox import SandboxCookie, SignedCookie
from server.settings import Settings
from server.valkey import connect, native
from server.web import partials
from server.web.guard import INSTRUCTOR_COOKIE
from server.web.middleware import SandboxMiddleware, SecurityHeaders
from server.web.secret import load_secret
from server.web.views import api as views_api
from server.web.views import classroom as views_classroom
from server.web.views import console as views_console
from server.web.views import instructor as views_instructor
from server.web.views import pages as views_pages
from server.web.views import progress as views_progress
from server.web.views import room as views_room
from server.web.views import stream as views_stream
from server.widgets import WIDGETS, traces

SITE = Path(__file__).resolve().parent.parent / "site"


def create_app(url: str, settings: Settings | None = None) -> Starlette:
    settings = (settings or Settings.from_env()).check()
    settings_module.install(settings)
    cluster = connect.wants_cluster(url)  # EMQLAB_VALKEY_CLUSTER, else INFO cluster
    cookies = Cookies.made(load_secret(settings), settings)  # EMQLAB_SECRET, else the state folder's file
    templates = Jinja2Templates(directory=str(SITE / "templates"))
    # Templates ship with the code: no stat() of every template on every render.
    templates.env.auto_reload = False
    registry.load_all()  # every script with its includes: a broken one stops the start
    # A dive naming a widget the site does not have stops the start, not a page view.
    course = load_course(SITE / "content", known_widgets=[*WIDGETS, console_page.NAME])
    app = Starlette(
        routes=_routes(),
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(SandboxMiddleware, cookie=cookies.cookie, room_cookie=cookies.room_cookie,
                       watch_cookie=cookies.watch_cookie),
        ],
        exception_handlers=views_pages.exception_handlers(),
        lifespan=_lifespan(url, cluster, settings),
    )
    for name, cookie in vars(cookies).items():
        setattr(app.state, name, cookie)
    app.state.settings = settings
    app.state.cluster = cluster
    app.state.templates = templates
    app.state.course = course
    app.state.render_widget = partials.renderer(templates)
    return app


@dataclass(frozen=True)
class Cookies:
    """The site's signed cookies, each named as the `app.state` attribute it lives on."""

    cookie: SandboxCookie
    room_cookie: SignedCookie
    instructor_cookie: SignedCookie
    flash_cookie: SignedCookie
    watch_cookie: SignedCookie

    @classmethod
    def made(cls, secret: str, settings: Settings) -> Cookies:
        secure = settings.secure_cookies
        return cls(
            cookie=SandboxCookie(secret, secure=secure),
            room_cookie=SignedCookie(ROOM_COOKIE, secret, "emqlab-room", settings.room_ttl, secure),
            instructor_cookie=SignedCookie(
                INSTRUCTOR_COOKIE, secret, "emqlab-instructor", settings.instructor_session, secure
            ),
            flash_cookie=SignedCookie(views_instructor.FLASH_COOKIE, secret, "emqlab-flash", 60, secure),
            watch_cookie=SignedCookie(WATCH_COOKIE, secret, "emqlab-watch", 3600, secure),
        )


# Gen-2 thresholds: the cyclic collector's full pass walks every object not
# frozen; with a thousand streams open that walk took 250 ms, and every page
# stalled behind it (the fan-out's slowest broadcasts). Full passes now come
# ten times rarer; gen 0 and 1 keep Python's defaults.
GC_THRESHOLDS = (700, 10, 100)


def settle_heap() -> None:
    """Freeze what start-up built (the course, templates, scripts: hundreds of
    thousands of objects that live as long as the process), so no collection
    walks them again, and make full collections rarer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _lifespan(url: str, cluster: bool, settings: Settings) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """Open the Valkey clients, start the hub, the reaper and the traces; undo it all at the end."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        conn = connect.open_client(url, cluster)  # Redis, or RedisCluster on a cluster
        app.state.conn = conn
        app.state.console_conn = console_client.open_client(url, cluster)  # RESP2, as valkey-cli
        with contextlib.suppress(redis.RedisError, OSError):
            await enable_notifications(conn)
        with contextlib.suppress(redis.RedisError, OSError):
            # A managed Valkey loaded it at start; an external one may allow MODULE LOAD.
            app.state.native = await native.ensure_loaded(conn)
        await traces.start(app)  # each widget's tour, recorded on Valkey for the no-JS trace
        hub = Hub(url, cluster=cluster)
        app.state.hub = hub
        reaper = Reaper(conn, settings.sandbox_ttl, every=settings.reap_every)
        app.state.attendance = attendance = presence.Attendance(conn)
        await hub.start()
        await reaper.start()
        await attendance.start()
        settle_heap()
        try:
            yield
        finally:
            await traces.stop(app)
            await attendance.stop()
            await reaper.stop()
            await hub.stop()
            await app.state.console_conn.aclose()
            await conn.aclose()

    return lifespan


def _routes() -> list[BaseRoute]:
    return [
        Route("/api/widgets/{widget}/state", views_api.state, methods=["GET"]),
        Route("/api/widgets/{widget}/{action}", views_api.act, methods=["POST"]),
        Route("/api/stream", views_stream.stream, methods=["GET"]),
        *views_console.routes(),
        Mount("/static", StaticFiles(directory=str(SITE / "static")), name="static"),
        *views_instructor.routes(),
        *views_classroom.routes(),
        *views_room.routes(),
        *views_progress.routes(),
        *views_pages.routes(),  # catch-all page routes: keep last
    ]
