"""One pure ASGI middleware (not BaseHTTPMiddleware, so the SSE stream passes unbuffered):
security headers, a new visitor's sandbox cookie, and one deadline per request."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping
from http.cookies import SimpleCookie
from types import MappingProxyType

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.refusal import Refusal
from server.sandboxes.sandbox import COOKIE, NoSandbox, new_id
from server.sandboxes.sandbox import SandboxCookie as Cookie
from server.web import templating
from server.web.errors import PageAnswer, json_answer, wants_page

LATE = "Valkey did not answer in time; the page will try again."

# the one inline script the site has: the exercises' import map, by its hash
CSP = (
    f"default-src 'self'; script-src 'self' {templating.CSP_SOURCE}; style-src 'self'; img-src 'self' data:; "
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
    per request until its answer starts (a stopped Valkey answers nothing at all): past it, a 503 in
    words, on `error_page` for a browser's page request (`errors.wants_page`), else JSON. A stream,
    once it answers, keeps its own deadlines."""

    def __init__(self, app: ASGIApp, cookie: Cookie, seconds: float = 10.0,
                 error_page: PageAnswer | None = None) -> None:
        self.app = app
        self.cookie = cookie
        self.seconds = seconds
        self.error_page = error_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        added = PRIVATE_HEADERS if path.startswith(PRIVATE_PATHS) else SECURITY_HEADERS
        visitor = self._new_visitor(scope, path)
        started = False
        deadline = asyncio.timeout(self.seconds)

        async def secured(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                if not started and message.get("status") == 200 and any(
                        name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                        for name, value in message.get("headers", ())):
                    deadline.reschedule(None)  # a stream lives on: its sends and reads have deadlines of their own
                started = True
                # one pass over the headers (MutableHeaders.setdefault scans and encodes per header)
                headers = [*message.get("headers", ()), *visitor]
                present = {name.lower() for name, _ in headers}
                message["headers"] = headers + [h for h in added if h[0] not in present]
            await send(message)

        try:
            async with deadline:
                await self.app(scope, receive, secured)
        except TimeoutError:
            if started:
                raise
            late = Refusal(LATE, status=503, retry_after=2)
            request = Request(scope, receive)
            answer = (await self.error_page(request, late) if self.error_page is not None and wants_page(request)
                      else json_answer(late))
            await answer(scope, receive, secured)

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
