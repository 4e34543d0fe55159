"""One pure ASGI middleware (not BaseHTTPMiddleware, so the SSE stream passes unbuffered):
security headers, a new visitor's sandbox cookie, and one deadline per request."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping
from http.cookies import SimpleCookie
from types import MappingProxyType

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.sandboxes.sandbox import COOKIE, NoSandbox, new_id
from server.sandboxes.sandbox import SandboxCookie as Cookie
from server.web import editor_assets

# the one inline script the site has: the exercises' import map, by its hash
CSP = (
    f"default-src 'self'; script-src 'self' {editor_assets.CSP_SOURCE}; style-src 'self'; img-src 'self' data:; "
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
PRIVATE_HEADERS = (*SECURITY_HEADERS, (b"cache-control", b"no-store"))
PRIVATE_PATHS = ("/instructor", "/room", "/api/")


class Site:
    """Every answer gets the security headers it does not set itself (no-store under the private paths).
    A page visit without a valid sandbox cookie gets a new sandbox id (on the request's state and as a
    cookie); API requests never do: a forged cookie cannot conjure a sandbox mid-session. One deadline
    per request (a stopped Valkey answers nothing at all): past it, an answer not yet started is a 503
    in words. Streams keep their own deadlines."""

    def __init__(self, app: ASGIApp, cookie: Cookie, seconds: float = 10.0) -> None:
        self.app = app
        self.cookie = cookie
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        added = PRIVATE_HEADERS if path.startswith(PRIVATE_PATHS) else SECURITY_HEADERS
        visitor = self._new_visitor(scope, path)
        started = False

        async def secured(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                # one pass over the headers (MutableHeaders.setdefault scans and encodes per header)
                headers = [*message.get("headers", ()), *visitor]
                present = {name.lower() for name, _ in headers}
                message["headers"] = headers + [h for h in added if h[0] not in present]
            await send(message)

        streaming = path == "/api/stream" or any(name == b"accept" and b"text/event-stream" in value
                                                  for name, value in scope.get("headers", ()))
        try:
            async with asyncio.timeout(None if streaming else self.seconds):
                await self.app(scope, receive, secured)
        except TimeoutError:
            if started or streaming:
                raise
            body = b'{"error":"Valkey did not answer in time; the page will try again."}'
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"2"), *added]})
            await send({"type": "http.response.body", "body": body})

    def _new_visitor(self, scope: Scope, path: str) -> tuple[tuple[bytes, bytes], ...]:
        """The Set-Cookie header of a new sandbox (named on the request's state too), or none."""
        if path.startswith(("/static/", "/api/")) or scope.get("method") != "GET":
            return ()
        if raw := cookie_value(scope):
            with contextlib.suppress(NoSandbox):  # forged or stale: treated as absent
                self.cookie.parse(raw)
                return ()
        fresh = new_id()
        scope.setdefault("state", {})["sandbox"] = fresh
        return ((b"set-cookie", self.cookie.header(fresh).encode("latin-1")),)


def cookie_value(scope: Scope, name: str = COOKIE) -> str | None:
    for header, value in scope.get("headers", []):
        if header == b"cookie":
            return _cookies(value).get(name)
    return None


@functools.lru_cache(maxsize=1024)
def _cookies(header: bytes) -> Mapping[str, str]:
    # A visitor sends the same Cookie header every time, and a request reads up to three cookies.
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header.decode("latin-1"))
    except Exception:  # noqa: BLE001 - a garbled header is simply no cookie
        return MappingProxyType({})
    # read-only: every request with this header shares the one mapping
    return MappingProxyType({key: morsel.value for key, morsel in jar.items()})
