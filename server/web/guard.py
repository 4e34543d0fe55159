"""Request guards: sandbox, origin, instructor, demo mode, rates, caps and activity.

Every guard either passes or raises `Refused(status, sentence)`; the views
turn that into a 4xx JSON answer (or a page) before anything is written.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

from server.sandboxes import site_scripts
from server.sandboxes.sandbox import REGISTRY_KEY, NoSandbox

DEMO_REFUSAL = "demo mode: only the instructor acts in this room"
INSTRUCTOR_COOKIE = "emqlab_instructor"


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# -- who is asking ---------------------------------------------------------------


def sandbox_of(request: Request) -> str:
    """The sandbox the request acts in: the joined room's, else the visitor's own.

    Named by signed cookies only, never by the body or the URL.
    """
    error = getattr(request.state, "sandbox_error", None)
    if error:
        raise Refused(503, error)
    sandbox = getattr(request.state, "sandbox", None)
    if sandbox:
        return str(sandbox)
    return request.app.state.cookie.read(request)


def visitor_of(request: Request) -> str:
    """The visitor's own sandbox id (their identity, even inside a room)."""
    visitor = getattr(request.state, "visitor", None)
    if visitor:
        return str(visitor)
    return request.app.state.cookie.read(request)


def room_of(request: Request) -> str | None:
    return getattr(request.state, "room", None)


def token_fingerprint(token: str) -> str:
    """What the instructor cookie carries: changing the token signs everyone out."""
    return hashlib.sha256(b"emqlab-instructor:" + token.encode()).hexdigest()[:32]


def token_matches(given: object, token: str) -> bool:
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def is_instructor(request: Request) -> bool:
    token = request.app.state.settings.instructor_token
    if not token:
        return False
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer ") and token_matches(auth[7:].strip(), token):
        return True
    value = request.app.state.instructor_cookie.read(request)
    return isinstance(value, str) and hmac.compare_digest(value, token_fingerprint(token))


def require_instructor(request: Request) -> None:
    """403 when instructors are off, 403 for a foreign Origin, 401 when not signed in."""
    if not request.app.state.settings.instructor_token:
        raise Refused(403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN")
    check_origin(request)
    if not is_instructor(request):
        raise Refused(401, "sign in as the instructor first (POST /instructor/sign-in with the token)")


# -- cross-site requests ---------------------------------------------------------


def check_origin(request: Request) -> None:
    """Refuse a state change sent from a page of another site."""
    origin = request.headers.get("origin")
    if origin is None:
        # Not a browser page (curl, tests) — unless the browser says it is cross-site.
        if request.headers.get("sec-fetch-site", "") == "cross-site":
            raise Refused(403, "cross-site request refused")
        return
    host = request.headers.get("host", "")
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:
        netloc = ""
    if not netloc or netloc != host:
        shown = origin if len(origin) <= 100 and origin.isprintable() else "(unreadable)"
        raise Refused(403, f"cross-site request refused: Origin {shown} is not this site")


def check_demo(request: Request) -> None:
    if getattr(request.state, "demo", False) and not is_instructor(request):
        raise Refused(403, DEMO_REFUSAL)


# -- rates -----------------------------------------------------------------------


ROOM_RATE_FACTOR = 5


def rate_counters(request: Request, sandbox: str) -> dict[str, int]:
    """The fixed-window counters one action counts against, with their caps.

    Each visitor is counted against their own sandbox, so a class in one room
    does not share one visitor's budget; a room's shared sandbox has its own,
    ROOM_RATE_FACTOR times larger.
    """
    limit = request.app.state.settings.rate_limit
    if limit <= 0:
        return {}
    try:
        who = visitor_of(request)
    except NoSandbox:
        who = sandbox
    counted = {who: limit}
    if sandbox != who:
        counted[sandbox] = limit * ROOM_RATE_FACTOR
    return counted


def rate_key(name: str) -> str:
    return f"lab:{{{name}}}:rate:{int(time.time() // 10)}"


def judge_rate(request: Request, counted: dict[str, int], counts: list[Any]) -> None:
    who = next(iter(counted), None)
    for (name, cap), count in zip(counted.items(), counts):
        if int(count) > cap:
            whose = "per visitor" if name == who else "in this room"
            raise Refused(429, f"too many actions: at most {cap} every 10 seconds {whose}")


def client_address(request: Request) -> str:
    host = request.client.host if request.client else "unknown"
    return "".join(ch for ch in host if ch.isalnum() or ch in ".:-")[:64] or "unknown"


def _attempts_key(request: Request, kind: str) -> str:
    return f"lab:attempts:{kind}:{client_address(request)}:{int(time.time() // 60)}"


async def check_attempts(request: Request, kind: str) -> None:
    """Refuse once a client address has failed `attempt_limit` sign-ins (or
    joins with an unknown code) this minute: no guessing tokens or codes."""
    limit = request.app.state.settings.attempt_limit
    if limit <= 0:
        return
    count = await request.app.state.conn.get(_attempts_key(request, kind))
    if count is not None and int(count) >= limit:
        raise Refused(429, f"too many failed attempts: at most {limit} a minute; wait a minute and try again")


async def count_failed_attempt(request: Request, kind: str) -> None:
    key = _attempts_key(request, kind)
    async with request.app.state.conn.pipeline(transaction=False) as pipe:
        pipe.incr(key)
        pipe.expire(key, 120)
        await pipe.execute()


# -- caps and activity -------------------------------------------------------------

async def admit(conn: Any, sandbox: str, cap: int) -> None:
    """Register the sandbox's activity; Refused(503) when the site is full."""
    # One script, so two new visitors cannot both take the last place.
    script = site_scripts.script(conn, "admit")
    if not int(await script(keys=[REGISTRY_KEY], args=[sandbox, int(time.time() * 1000), cap])):
        raise Refused(
            503,
            f"Flows Lab is full: {cap} sandboxes are live. Idle ones expire; try again in a few minutes.",
        )


def page_of(request: Request) -> str | None:
    """The course page the request came from (its Referer), if it is one."""
    referer = request.headers.get("referer")
    course = getattr(request.app.state, "course", None)
    if not referer or course is None:
        return None
    try:
        parts = urlsplit(referer)
    except ValueError:
        return None
    if parts.netloc != request.headers.get("host", ""):
        return None
    page = course.page(parts.path)
    return page.path if page is not None else None


def queue_activity(request: Request, pipe: Any, sandbox: str, widget: str) -> None:
    """Queue on `pipe` the writes that record a sandbox's last activity."""
    settings = request.app.state.settings
    meta = f"lab:{{{sandbox}}}:meta"
    fields: dict[str, Any] = {"widget": widget, "seen": int(time.time())}
    page = page_of(request)
    if page:
        fields["page"] = page
    pipe.hset(meta, mapping=fields)
    # Belt and braces: the reaper removes it with the sandbox, and if the
    # reaper never runs, it still goes.
    pipe.expire(meta, settings.sandbox_ttl * 2)
    room = room_of(request)
    if room:
        pipe.expire(f"lab:room:{room}", settings.room_ttl)


async def touch(request: Request, sandbox: str, widget: str) -> None:
    """Record the sandbox's last activity, for expiry and the instructor page."""
    conn = request.app.state.conn
    await admit(conn, sandbox, request.app.state.settings.max_sandboxes)
    async with conn.pipeline(transaction=False) as pipe:
        queue_activity(request, pipe, sandbox, widget)
        await pipe.execute()


async def enter(request: Request, sandbox: str, widget: str, *, cap_keys: bool) -> None:
    """Every check and record an action needs before it runs, in two round trips.

    The admission script (the sandbox cap), then one pipeline: the rate
    counters, the activity record and, unless the action is Reset, the key
    counts the cap is judged on. Refused on the first limit passed.
    """
    conn = request.app.state.conn
    await admit(conn, sandbox, request.app.state.settings.max_sandboxes)
    counted = rate_counters(request, sandbox)
    async with conn.pipeline(transaction=False) as pipe:
        for name in counted:
            pipe.incr(rate_key(name))
            pipe.expire(rate_key(name), 20)
        queue_activity(request, pipe, sandbox, widget)
        if cap_keys:
            pipe.hgetall(f"lab:{{{sandbox}}}:meta")
        replies = await pipe.execute()
    judge_rate(request, counted, replies[: 2 * len(counted) : 2])
    if cap_keys:
        judge_keys(request, replies[-1])


def judge_keys(request: Request, raw: dict[Any, Any]) -> None:
    # Kept for record_keys: an action that leaves the count as it was writes nothing.
    request.state.key_census = {str(k): str(v) for k, v in raw.items()}
    cap = request.app.state.settings.max_keys_per_sandbox
    held = sum(
        int(v) for k, v in raw.items()
        if str(k).startswith("keys:") and str(v).isdigit()
    )
    if held > cap:
        raise Refused(409, f"this sandbox holds {held} keys, more than its cap of {cap}: press Reset")


async def record_keys(request: Request, sandbox: str, widget: str, snapshot: dict[str, Any]) -> None:
    """After an action: how many keys the widget's queues hold now."""
    count = int(snapshot["key_count"])
    census = getattr(request.state, "key_census", None)
    if census is not None and census.get(f"keys:{widget}") == str(count):
        return  # read this request, before the action: unchanged, so no write
    await request.app.state.conn.hset(f"lab:{{{sandbox}}}:meta", f"keys:{widget}", count)


__all__ = [
    "DEMO_REFUSAL",
    "NoSandbox",
    "Refused",
    "admit",
    "check_attempts",
    "check_demo",
    "check_origin",
    "count_failed_attempt",
    "enter",
    "is_instructor",
    "queue_activity",
    "record_keys",
    "require_instructor",
    "room_of",
    "sandbox_of",
    "touch",
    "visitor_of",
]
