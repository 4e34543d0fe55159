"""The instructor's sign-in sessions, kept in Valkey so that signing out ends them on every worker.

The signed cookie carries only a random session id, nothing of the token (a hash of it would let a
copied cookie's holder guess offline). The session (`lab:instructor:<id>`) holds an HMAC of the token
under the site's secret: a new token ends every session. `Resolve` looks the cookie up once per
request, before the views, so guards and templates ask "signed in?" without waiting.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

from redis.exceptions import RedisError
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from server.emq.wire import Conn, as_text
from server.web.services import services

log = logging.getLogger("emqlab.instructor")

SESSION_STATE = "instructor_session"  # the request state's entry: the live session id, when there is one
PREFIX = "lab:instructor:"


class Sessions:
    def __init__(self, secret: str, token: str | None, ttl: int) -> None:
        self.ttl = ttl
        self.mark = hmac.new(secret.encode(), b"emqlab-instructor:" + (token or "").encode(),
                             hashlib.sha256).hexdigest() if token else ""

    async def open(self, conn: Conn) -> str:
        """A new session: its id, for the cookie."""
        sid = secrets.token_urlsafe(24)
        await conn.set(PREFIX + sid, self.mark, ex=self.ttl)
        return sid

    async def live(self, conn: Conn, sid: object) -> bool:
        if not self.mark or not isinstance(sid, str) or not sid.replace("-", "").replace("_", "").isalnum():
            return False
        found = await conn.get(PREFIX + sid[:64])
        return found is not None and hmac.compare_digest(as_text(found), self.mark)

    async def close(self, conn: Conn, sid: object) -> None:
        if isinstance(sid, str):
            await conn.delete(PREFIX + sid[:64])


def session_of(request: Request) -> str | None:
    """The live session this request carries (looked up by `Resolve`), if any."""
    found = request.scope.get("state", {}).get(SESSION_STATE)
    return found if isinstance(found, str) else None


class Resolve:
    """Pure ASGI: a request carrying the instructor cookie gets its session looked up once.
    Valkey away: not signed in for this request (the page says so; nothing is granted)."""

    def __init__(self, app: ASGIApp, cookie_name: str) -> None:
        self.app = app
        self.cookie_name = cookie_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        cookies = b";".join(value for name, value in scope.get("headers", ()) if name == b"cookie")
        if scope["type"] == "http" and f"{self.cookie_name}=".encode() in cookies:
            request = Request(scope)
            found = services(request)
            sid = found.cookies.instructor.read(request)
            try:
                if await found.sessions.live(found.conn, sid):
                    scope.setdefault("state", {})[SESSION_STATE] = sid
            except (RedisError, OSError) as exc:
                log.warning("instructor session not checked, Valkey did not answer: %s", exc)
        await self.app(scope, receive, send)
