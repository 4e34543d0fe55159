"""Request guards for the widget API: sandbox, origin, rate and activity."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from starlette.requests import Request

from server.sandbox import REGISTRY_KEY, NoSandbox


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def sandbox_of(request: Request) -> str:
    """The sandbox named by the request's signed cookie (never by its body)."""
    sandbox = getattr(request.state, "sandbox", None)
    if sandbox:
        return str(sandbox)
    return request.app.state.cookie.read(request)


def check_origin(request: Request) -> None:
    """Refuse a state change sent from a page of another site."""
    origin = request.headers.get("origin")
    if origin is None:
        return  # not a browser page (curl, tests); cookies still gate the sandbox
    host = request.headers.get("host", "")
    if urlsplit(origin).netloc != host:
        raise Refused(403, f"cross-site request refused: Origin {origin} is not this site")


async def check_rate(request: Request, sandbox: str) -> None:
    """A fixed window per sandbox, counted in Valkey so every worker shares it."""
    limit = request.app.state.settings.rate_limit
    if limit <= 0:
        return
    window = int(time.time() // 10)
    key = f"lab:{{{sandbox}}}:rate:{window}"
    conn = request.app.state.conn
    async with conn.pipeline(transaction=False) as pipe:
        pipe.incr(key)
        pipe.expire(key, 20)
        count, _ = await pipe.execute()
    if int(count) > limit:
        raise Refused(429, f"too many actions: at most {limit} every 10 seconds per sandbox")


async def touch(request: Request, sandbox: str, widget: str) -> None:
    """Record the sandbox's last activity, for expiry and the instructor page."""
    conn = request.app.state.conn
    async with conn.pipeline(transaction=False) as pipe:
        pipe.zadd(REGISTRY_KEY, {sandbox: int(time.time() * 1000)})
        pipe.hset(f"lab:{{{sandbox}}}:meta", mapping={"widget": widget, "seen": int(time.time())})
        await pipe.execute()


__all__ = ["Refused", "NoSandbox", "sandbox_of", "check_origin", "check_rate", "touch"]
