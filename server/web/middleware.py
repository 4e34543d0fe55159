"""Pure ASGI middlewares (not BaseHTTPMiddleware, so the SSE stream passes unbuffered):
security headers, a new visitor's sandbox cookie, and one deadline per request."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from http.cookies import SimpleCookie
from types import MappingProxyType

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.sandboxes.sandbox import COOKIE, NoSandbox, new_id
from server.sandboxes.sandbox import SandboxCookie as Cookie

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
    """Adds the security headers an answer does not set itself (and no-store under the private paths)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        private = scope.get("path", "").startswith(PRIVATE_PATHS)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # one pass over the headers (MutableHeaders.setdefault scans and encodes per header)
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
    # A visitor sends the same Cookie header every time, and a request reads up to three cookies.
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header.decode("latin-1"))
    except Exception:  # noqa: BLE001 - a garbled header is simply no cookie
        return MappingProxyType({})
    # read-only: every request with this header shares the one mapping
    return MappingProxyType({key: morsel.value for key, morsel in jar.items()})


class SandboxCookie:
    """A page visit without a valid sandbox cookie gets a new sandbox id (on the request's state
    and as a cookie). API requests never do: a forged cookie cannot conjure a sandbox mid-session."""

    def __init__(self, app: ASGIApp, cookie: Cookie) -> None:
        self.app = app
        self.cookie = cookie

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or path.startswith(("/static/", "/api/")) or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        raw = cookie_value(scope)
        if raw:
            try:
                self.cookie.parse(raw)
            except NoSandbox:
                pass  # forged or stale: treated as absent
            else:
                await self.app(scope, receive, send)
                return
        fresh = new_id()
        scope.setdefault("state", {})["sandbox"] = fresh
        header = self.cookie.header(fresh).encode("latin-1")

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (b"set-cookie", header)]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


class Deadline:
    """One deadline per request, whatever it sends to Valkey (a stopped Valkey answers nothing at all):
    past it, an answer not yet started is a 503 in words. Streams keep their own deadlines."""

    def __init__(self, app: ASGIApp, seconds: float = 10.0) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "") == "/api/stream" or _wants_stream(scope):
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            async with asyncio.timeout(self.seconds):
                await self.app(scope, receive, watched)
        except TimeoutError:
            if started:
                raise
            body = b'{"error":"Valkey did not answer in time; the page will try again."}'
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"2")]})
            await send({"type": "http.response.body", "body": body})


def _wants_stream(scope: Scope) -> bool:
    return any(name == b"accept" and b"text/event-stream" in value for name, value in scope.get("headers", ()))
