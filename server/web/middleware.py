"""Two pure ASGI middlewares: security headers, and the sandbox cookie.

Pure ASGI (not BaseHTTPMiddleware) so the SSE stream passes through
unbuffered.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from http.cookies import SimpleCookie
from types import MappingProxyType
from typing import Any

from redis.exceptions import RedisError
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.sandboxes import rooms
from server.sandboxes.sandbox import COOKIE, SANDBOX_RE, NoSandbox, SandboxCookie, SignedCookie, new_id

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


# Every answer's security headers, encoded once; (name, value) as ASGI sends them.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
NO_STORE = (b"cache-control", b"no-store")
PRIVATE_PATHS = ("/instructor", "/room", "/api/")


class SecurityHeaders:
    """Adds the security headers an answer does not set itself (and
    ``Cache-Control: no-store`` under the private paths)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        private = scope.get("path", "").startswith(PRIVATE_PATHS)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # one pass over the answer's own headers, not one per header
                # added (MutableHeaders.setdefault scans and encodes each time)
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [h for h in SECURITY_HEADERS if h[0] not in present]
                if private and NO_STORE[0] not in present:
                    headers.append(NO_STORE)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def cookie_value(scope: Scope, name: str = COOKIE) -> str | None:
    for header, value in scope.get("headers", []):
        if header == b"cookie":
            return _cookies(value).get(name)
    return None


@functools.lru_cache(maxsize=1024)
def _cookies(header: bytes) -> Mapping[str, str]:
    # A visitor sends the same Cookie header with every request, and a request
    # reads up to three of its cookies: parsed once, not three times per request.
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header.decode("latin-1"))
    except Exception:  # noqa: BLE001 - a garbled header is simply no cookie
        return MappingProxyType({})
    # read-only: every request with this header shares the one mapping
    return MappingProxyType({key: morsel.value for key, morsel in jar.items()})


ROOM_DOWN = "Valkey is unreachable right now, so your room cannot be looked up; the widgets recover when it returns."


class SandboxMiddleware:
    """Names the visitor's sandbox; a page visit without a valid cookie gets one.

    API requests never get a new sandbox here: an action without a valid
    cookie is refused by the API (403), so a forged cookie cannot conjure a
    sandbox mid-session. A visitor who joined a room (signed room cookie) acts
    in the room's sandbox while the room exists; `request.state.visitor` stays
    their own id.
    """

    def __init__(self, app: ASGIApp, cookie: SandboxCookie, room_cookie: SignedCookie | None = None,
                 watch_cookie: SignedCookie | None = None) -> None:
        self.app = app
        self.cookie = cookie
        self.room_cookie = room_cookie
        self.watch_cookie = watch_cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        raw = cookie_value(scope)
        sandbox: str | None = None
        if raw:
            try:
                sandbox = self.cookie.parse(raw)
            except NoSandbox:
                sandbox = None  # forged or stale: treated as absent
        path: str = scope.get("path", "")
        if path.startswith("/static/"):
            await self.app(scope, receive, send)
            return
        is_page = scope.get("method") == "GET" and not path.startswith("/api/")
        fresh = None
        if sandbox is None and is_page:
            fresh = sandbox = new_id()
        stale_room = False
        if sandbox is not None:
            state["sandbox"] = state["visitor"] = sandbox
            if not fresh:
                stale_room = await self.resolve_room(scope, state)

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                from starlette.responses import Response

                carrier = Response()
                if fresh:
                    self.cookie.attach(carrier, fresh)
                if stale_room and self.room_cookie is not None:
                    self.room_cookie.clear(carrier)
                headers = MutableHeaders(scope=message)
                for key, value in carrier.headers.items():
                    if key == "set-cookie":
                        headers.append("set-cookie", value)
            await send(message)

        # an answer with no cookie to set or drop passes through unwrapped
        await self.app(scope, receive, send_with_cookie if fresh or stale_room else send)

    async def resolve_room(self, scope: Scope, state: dict[str, Any]) -> bool:
        """Point the request at the sandbox its class's mode names; True when
        the room cookie must go (forged, expired, the room closed, or the
        visitor no longer in it).

        Read from Valkey on every request, never cached in the worker: a mode
        change or a close holds for the very next request on any worker."""
        if self.watch_cookie is not None and self.watching(scope, state):
            return False
        if self.room_cookie is None:
            return False
        raw = cookie_value(scope, self.room_cookie.name)
        if not raw:
            return False
        code = self.room_cookie.value(raw)
        if not isinstance(code, str):
            state["room_forged"] = True  # an action carrying it is refused (guard.sandbox_of)
            return True  # forged or expired: drop it
        app = scope.get("app")
        conn = getattr(getattr(app, "state", None), "conn", None)
        if conn is None:
            return False
        try:
            room, member = await rooms.membership(conn, code, state["visitor"])
        except (RedisError, OSError):
            state["sandbox_error"] = ROOM_DOWN
            return False
        if room is None or not member:
            return True
        state["sandbox"], state["demo"] = room.acting(state["visitor"])
        state["room"] = room.code
        state["mode"] = room.mode
        return False

    def watching(self, scope: Scope, state: dict[str, Any]) -> bool:
        """The instructor watching a learner: their sandbox, read-only."""
        assert self.watch_cookie is not None
        watched = self.watch_cookie.value(cookie_value(scope, self.watch_cookie.name))
        if not isinstance(watched, str) or not SANDBOX_RE.match(watched):
            return False
        state["sandbox"] = watched
        state["watching"] = watched
        state["demo"] = True  # read-only, refused like a learner in a demo
        return True


__all__ = ["NoSandbox", "SandboxMiddleware", "SecurityHeaders"]
