"""The app's services, one typed object built in `app.py`'s lifespan: a view asks `services(request)`,
never `request.app.state`, so every use is typed. The types are imported for the checker only: the
web module that defines some of them (guards) asks for `services` too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    from markupsafe import Markup
    from redis.asyncio import Redis
    from redis.asyncio.cluster import RedisCluster
    from starlette.templating import Jinja2Templates

    from server.console.as_user import Runner
    from server.content import Course
    from server.exercises import GraderPool
    from server.live.hub import Hub
    from server.sandboxes.sandbox import SandboxCookie, SignedCookie
    from server.settings import Settings
    from server.web.guards import StreamSlots, Windows
    from server.web.sessions import Sessions
    from server.widgets.draw import Drawing
    from server.widgets.frames import Frames
    from server.widgets.runner import Lab
    from server.widgets.snapshot import Catalog


@dataclass(frozen=True, slots=True)
class Cookies:
    """The signed cookies the site sets: the sandbox's, the class's, the instructor's, a notice, a Watch."""

    sandbox: SandboxCookie
    room: SignedCookie
    instructor: SignedCookie
    flash: SignedCookie
    watch: SignedCookie


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    cookies: Cookies
    sessions: Sessions  # the instructor's sessions, kept in Valkey
    templates: Jinja2Templates
    course: Course
    catalog: Catalog
    windows: Windows  # the per-process rate windows
    stream_slots: StreamSlots
    drawing: Drawing
    render_widget: Callable[[str, dict[str, Any]], str]  # the Markdown's {widget} directive
    conn: Redis | RedisCluster
    lab: Lab
    frames: Frames
    hub: Hub
    graders: GraderPool
    console: Runner  # the console's lines, run as the sandbox's ACL user
    engine_warning: str | None  # an external Valkey older than the Lua fixes: said on /instructor
    # a page's body is the same for every visitor: rendered once (views/pages.py)
    page_bodies: dict[str, Markup] = field(default_factory=dict)


def services(request: HTTPConnection) -> Services:
    """The running app's services (set by its lifespan, before the first request)."""
    found: Services = request.app.state.services
    return found
