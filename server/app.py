"""Wiring: settings, Valkey, the course, the widgets, routes and middleware. Nothing else."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from pathlib import Path

from redis.exceptions import RedisError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Mount
from starlette.templating import Jinja2Templates

from server.console import api as console_api
from server.console.as_user import Runner
from server.content import Course, Page, Placement, load_course
from server.content.errors import ContentError
from server.emq import registry
from server.exercises import GraderPool, PoolSettings, catalogue
from server.lifecycle import reaper
from server.live.hub import Hub
from server.live.streams import Streams
from server.sandboxes.sandbox import SandboxCookie, SignedCookie
from server.settings import Settings
from server.valkey import client, engine, native
from server.valkey.datadir import note_secret, site_secret
from server.web import errors, guards, templating
from server.web.guards import INSTRUCTOR_COOKIE
from server.web.middleware import Site
from server.web.services import Cookies, Services
from server.web.sessions import Resolve, Sessions
from server.web.templating import CachedStatic, static_url
from server.web.views import classroom, console, exercises, instructor, pages, room, stream, widgets
from server.widgets import WIDGETS, questions
from server.widgets.draw import Drawing
from server.widgets.frames import Frames
from server.widgets.runner import Lab
from server.widgets.snapshot import Catalog

SITE = Path(__file__).resolve().parent.parent / "site"
ROOM_COOKIE, WATCH_COOKIE, FLASH_COOKIE = "emqlab_room", "emqlab_watch", "emqlab_flash"
EXERCISE = "exercise"  # the {widget} name that places an exercise (its body names which: `name: fan-in`)
# what a dive may place besides the widgets: the console and the exercises
PLACEABLE = (console_api.NAME, EXERCISE)


def bind_questions(catalog: Catalog, course: Course) -> None:
    """Bind each dive's questions to their widgets: a broken one, or an exercise the site does not have,
    stops the start, naming the dive and line."""

    def check(page: Page, placement: Placement) -> None:
        if placement.name == EXERCISE and placement.options.get("name") not in catalogue.names():
            raise ContentError(f"no exercise named {placement.options.get('name')!r} "
                               f"(known: {', '.join(catalogue.names())})")
        widget = catalog.widgets.get(placement.name)
        if widget is None:
            return
        bound = list(catalog.questions.get(widget.name, ()))
        for spec in placement.questions:
            try:
                bound.append(questions.bind(widget, spec.as_json()))
            except questions.BadQuestion as exc:
                raise ContentError(str(exc), line=spec.line) from exc
        catalog.questions[widget.name] = tuple(bound)

    course.check_placements(check)


def create_app(url: str, settings: Settings | None = None, cluster: bool | None = None) -> Starlette:
    settings = settings or Settings.from_env()
    cluster = client.wants_cluster(url, cluster)
    # EMQLAB_SECRET, else the data directory's file (shared by every worker): cookies survive a restart
    secret = settings.secret or site_secret(settings.data_dir)
    secure = settings.secure_cookies
    cookie = SandboxCookie(secret, secure=secure)
    templates = Jinja2Templates(directory=str(SITE / "templates"))
    templates.env.auto_reload = False  # templates ship with the code: no stat() per render
    templates.env.globals["static_url"] = static_url(SITE / "static")
    registry.load_all()  # every script with its includes: a broken one stops the start
    catalog = Catalog(dict(WIDGETS))
    # a dive naming a widget the site does not have stops the start, not a page view
    course = load_course(SITE / "content", known_widgets=[*catalog.widgets, *PLACEABLE])
    bind_questions(catalog, course)
    static = Mount("/static", CachedStatic(directory=str(SITE / "static")), name="static")
    # The front-end packages of site/package-lock.json, as `make assets` installed them (no build step).
    vendor = Mount("/static/vendor", CachedStatic(directory=str(SITE / "node_modules"), check_dir=False), name="vendor")
    cookies = Cookies(
        sandbox=cookie,
        room=SignedCookie(ROOM_COOKIE, secret, "emqlab-room", settings.room_ttl, secure),
        instructor=SignedCookie(INSTRUCTOR_COOKIE, secret, "emqlab-instructor", settings.instructor_session, secure),
        flash=SignedCookie(FLASH_COOKIE, secret, "emqlab-flash", 60, secure),
        watch=SignedCookie(WATCH_COOKIE, secret, "emqlab-watch", 3600, secure))
    render_widget = templating.renderer(templates, catalog, {
        console_api.NAME: console_api.page_context,
        EXERCISE: lambda options: {"exercise": catalogue.get(str(options.get("name", "")))}})
    drawing = Drawing(templates.env)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        """Open the Valkey client, start the hub and the reaper, and keep the services; undo it all at the end."""
        conn = client.open_client(url, cluster)
        lab = Lab(conn, catalog, settings.sandbox_ttl * 2, settings.snapshot_bytes)
        frames = Frames(lab, drawing)
        hub = Hub(url, Streams(frames), catalog.widget_of_queue, cluster=cluster)
        # graders start with the first run (server/exercises/): a site nobody grades on starts none
        graders = GraderPool(PoolSettings.from_env())
        # the console runs each line as its sandbox's Valkey ACL user (server/console/as_user.py)
        console_runner = Runner(conn, secret)
        with contextlib.suppress(RedisError, OSError):
            await note_secret(conn, secret)  # a replaced secret signs everyone out: logged, never silent
        with contextlib.suppress(RedisError, OSError):
            await console_runner.probe()  # the idle user on every primary, before the first line
        with contextlib.suppress(RedisError, OSError):
            await native.ensure_loaded(conn)  # an external Valkey may allow MODULE LOAD
        engine_warning = None  # an external Valkey older than the Lua fixes: said on /instructor
        with contextlib.suppress(RedisError, OSError):
            engine_warning = engine.external_warning(await conn.info("server"))
        app.state.services = Services(
            settings=settings, cookies=cookies, templates=templates, course=course, catalog=catalog,
            sessions=Sessions(secret, settings.instructor_token, settings.instructor_session),
            windows=guards.Windows(), stream_slots=guards.StreamSlots(), drawing=drawing, render_widget=render_widget,
            conn=conn, lab=lab, frames=frames, hub=hub, graders=graders, console=console_runner,
            engine_warning=engine_warning)
        await hub.start()
        reaping = asyncio.create_task(reaper.run(conn, catalog, settings.sandbox_ttl, every=settings.reap_every),
                                      name="emqlab-reaper")
        # What is loaded by now lives as long as the process: out of the cyclic collector's sight (a full
        # collection with a thousand streams open paused the loop 100-300 ms); young ones run less often.
        gc.collect()
        gc.freeze()
        gc.set_threshold(10_000, 10, 50)
        try:
            yield
        finally:
            await client.stop_tasks([reaping])
            await hub.stop()
            await console_runner.aclose()
            await graders.stop()
            await conn.aclose()

    return Starlette(
        # the catch-all page routes: keep last
        routes=[*widgets.routes(), *console.routes(), *exercises.routes(), *instructor.routes(), *classroom.routes(),
                *stream.routes(), vendor, static,
                *pages.routes()],
        # gzip outside the rest: pages and JSON over 1 KB go compressed; the stream never
        # (Starlette leaves text/event-stream alone, so frames are not held back).
        middleware=[Middleware(GZipMiddleware, minimum_size=1024),
                    Middleware(Site, cookie=cookie, error_page=pages.refused),
                    Middleware(Resolve, cookie_name=INSTRUCTOR_COOKIE)],
        # every failure a view raises, answered in words: JSON to a script; to a browser the instructor's or
        # the room's page on their paths, else the site's error page
        exception_handlers={404: pages.not_found, **errors.exception_handlers(
            {"/instructor": instructor.refused, "/instructor/": instructor.refused,
             "/room": room.room_refused, "/room/join": room.room_refused,
             "/room/leave": room.room_refused, "/room/answer": room.room_refused},
            error_page=pages.refused)},
        lifespan=lifespan,
    )
