"""Two pure ASGI middlewares: security headers, and the sandbox cookie.

Pure ASGI (not BaseHTTPMiddleware) so the SSE stream passes through
unbuffered.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.sandbox import COOKIE, NoSandbox, SandboxCookie, new_id

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("Content-Security-Policy", CSP)
                headers.setdefault("X-Content-Type-Options", "nosniff")
                headers.setdefault("Referrer-Policy", "same-origin")
                headers.setdefault("X-Frame-Options", "DENY")
            await send(message)

        await self.app(scope, receive, send_with_headers)


def cookie_value(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a garbled header is simply no cookie
                return None
            if COOKIE in jar:
                return jar[COOKIE].value
    return None


class SandboxMiddleware:
    """Names the visitor's sandbox; a page visit without a valid cookie gets one.

    API requests never get a new sandbox here: an action without a valid
    cookie is refused by the API (403), so a forged cookie cannot conjure a
    sandbox mid-session.
    """

    def __init__(self, app: ASGIApp, cookie: SandboxCookie) -> None:
        self.app = app
        self.cookie = cookie

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
        is_page = scope.get("method") == "GET" and not path.startswith(("/api/", "/static/"))
        fresh = None
        if sandbox is None and is_page:
            fresh = sandbox = new_id()
        if sandbox is not None:
            state["sandbox"] = sandbox

        async def send_with_cookie(message: Message) -> None:
            if fresh and message["type"] == "http.response.start":
                from starlette.responses import Response

                carrier = Response()
                self.cookie.attach(carrier, fresh)
                headers = MutableHeaders(scope=message)
                for key, value in carrier.headers.items():
                    if key == "set-cookie":
                        headers.append("set-cookie", value)
            await send(message)

        await self.app(scope, receive, send_with_cookie)


__all__ = ["SecurityHeaders", "SandboxMiddleware", "NoSandbox"]
