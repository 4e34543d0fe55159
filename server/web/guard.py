"""Request guards: sandbox, origin, instructor, demo mode, rates, caps and activity.

Every guard either passes or raises `Refused(status, sentence)`; the views
turn that into a 4xx JSON answer (or a page) before anything is written.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import time
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

from server.emq.wire import Conn, Pipe
from server.sandboxes import admission
from server.sandboxes.sandbox import NoSandbox
from server.web import limits
from server.web.errors import Refused
from server.web.limits import check_attempts, client_address, count_failed_attempt

DEMO_REFUSAL = (
    "demo mode: only the instructor acts in this room; you are watching the instructor's sandbox, read-only"
)
FORGED_ROOM = "the class cookie is not one this site signed (or it expired): join your class again at /room"
WATCH_REFUSAL = "you are watching a learner's sandbox, read-only: stop watching to act"
INSTRUCTOR_COOKIE = "emqlab_instructor"


# -- who is asking ---------------------------------------------------------------



def noted(request: Request, name: str, default: Any = None) -> Any:
    """What the middleware noted on this request (`request.state`), or
    `default`. Read from the scope's state dict: Starlette's State raises and
    catches an AttributeError for every name not noted, a dozen per action."""
    return request.scope.get("state", {}).get(name, default)

def sandbox_of(request: Request) -> str:
    """The sandbox the request acts in: the joined room's, else the visitor's own.

    Named by signed cookies only, never by the body or the URL.
    """
    error = noted(request, "sandbox_error", None)
    if error:
        raise Refused(503, error)
    if noted(request, "room_forged", False):
        raise Refused(403, FORGED_ROOM)
    sandbox = noted(request, "sandbox", None)
    if sandbox:
        return str(sandbox)
    return str(request.app.state.cookie.read(request))


def visitor_of(request: Request) -> str:
    """The visitor's own sandbox id (their identity, even inside a room)."""
    visitor = noted(request, "visitor", None)
    if visitor:
        return str(visitor)
    return str(request.app.state.cookie.read(request))


def room_of(request: Request) -> str | None:
    room = noted(request, "room", None)
    return str(room) if room else None


def token_fingerprint(token: str) -> str:
    """What the instructor cookie carries: changing the token signs everyone out."""
    return hashlib.sha256(b"emqlab-instructor:" + token.encode()).hexdigest()[:32]


def token_matches(given: object, token: str) -> bool:
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def bearer_of(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else None


def is_instructor(request: Request) -> bool:
    token = request.app.state.settings.instructor_token
    if not token:
        return False
    if token_matches(bearer_of(request), token):
        return True
    value = request.app.state.instructor_cookie.read(request)
    return isinstance(value, str) and hmac.compare_digest(value, token_fingerprint(token))


async def require_instructor(request: Request) -> None:
    """403 when instructors are off, 403 for a foreign Origin, 401 when not signed in.

    A wrong `Authorization: Bearer` token counts as a failed sign-in (429 past
    the limit, like the form); a right one is never refused by that count."""
    if not request.app.state.settings.instructor_token:
        raise Refused(403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN")
    check_origin(request)
    if is_instructor(request):
        return
    if bearer_of(request) is not None:
        await count_failed_attempt(request, "sign-in")
        raise Refused(401, "that is not the instructor token")
    if room_of(request):
        raise Refused(403, "this is the instructor's: a learner in a class cannot use it")
    raise Refused(401, "sign in as the instructor first (POST /instructor/sign-in with the token)")


# -- cross-site requests ---------------------------------------------------------


def site_origin(request: Request) -> str:
    """scheme://host the site's pages come from: the configured public origin
    (behind a proxy), else the request's own scheme and Host."""
    public = request.app.state.settings.public_origin
    if public:
        return str(public).lower()
    # the scope's scheme, not request.url's: building a URL parses the whole request line again
    return f"{request.scope.get('scheme', 'http')}://{request.headers.get('host', '')}".lower()


@functools.lru_cache(maxsize=256)
def _origin_of(origin: str) -> str:
    """An Origin header as scheme://host[:port], lowercased ('' when it is none);
    a page sends the same one with every click."""
    try:
        parts = urlsplit(origin)
        return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""
    except ValueError:
        return ""


def check_origin(request: Request) -> None:
    """Refuse a state change sent from a page of another site (scheme, host and port)."""
    origin = request.headers.get("origin")
    if origin is None:
        # Not a browser page (curl, tests) — unless the browser says it is cross-site.
        if request.headers.get("sec-fetch-site", "") == "cross-site":
            raise Refused(403, "cross-site request refused")
        return
    given = _origin_of(origin)
    if not given or given != site_origin(request):
        shown = origin if len(origin) <= 100 and origin.isprintable() else "(unreadable)"
        raise Refused(403, f"cross-site request refused: Origin {shown} is not this site")


def check_demo(request: Request) -> None:
    """Refuse an action in a sandbox this page only watches (a demo, a Watch)."""
    if noted(request, "watching", None):
        raise Refused(403, WATCH_REFUSAL)
    if noted(request, "demo", False) and not is_instructor(request):
        raise Refused(403, DEMO_REFUSAL)


# -- admission --------------------------------------------------------------------


async def admit(conn: Conn, sandbox: str, cap: int, *, address: str = "unknown", address_cap: int = 0,
                used: bool = False, unused_idle: int = 60) -> None:
    """Register the sandbox's activity; Refused(503) when the site is full,
    Refused(429) when this address opened too many sandboxes."""
    answer = await admission.admit(conn, sandbox, admission.Limits(cap, address_cap, unused_idle), address, used)
    if answer == admission.ADDRESS_FULL:
        raise Refused(429, f"too many new sandboxes from one address: at most {address_cap} every "
                           f"{admission.WINDOW // 60} minutes; the ones you opened still work")
    if answer == admission.FULL:
        raise Refused(
            503,
            f"Flows Lab is full: {cap} sandboxes are live. Idle ones expire; try again in a few minutes.",
        )


async def admit_request(request: Request, sandbox: str, used: bool) -> None:
    """`admit` with the site's limits and the request's client address."""
    settings = request.app.state.settings
    await admit(request.app.state.conn, sandbox, settings.max_sandboxes, address=client_address(request),
                address_cap=settings.address_sandboxes, used=used, unused_idle=settings.unused_idle)


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


def activity_fields(request: Request, widget: str) -> list[Any]:
    """A last-activity record's fields and values, flat: the widget, when,
    and the course page the request came from."""
    fields: dict[str, Any] = {"widget": widget, "seen": round(time.time(), 3)}
    page = page_of(request)
    if page:
        fields["page"] = page
    return [item for pair in fields.items() for item in pair]


def activity_commands(request: Request, sandbox: str, widget: str, *, acting: bool = True,
                      pairs: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """The writes that record a sandbox's last activity (none for an
    instructor watching a learner: that is not the learner's activity).
    `acting=False` leaves out the acting sandbox's own record, for a caller
    that writes it in a script (`entry.way_in`); `pairs`: its fields, when
    the caller built them already."""
    settings = request.app.state.settings
    if noted(request, "watching", None):
        return []
    pairs = activity_fields(request, widget) if pairs is None else pairs
    commands: list[tuple[Any, ...]] = []
    # The acting sandbox's record (expiry, the instructor page) and, in a
    # class acting elsewhere (demo, together), the learner's own (the roster).
    visitor = noted(request, "visitor", None) or sandbox
    for whose in dict.fromkeys([sandbox, visitor]):
        if whose == sandbox and not acting:
            continue
        meta = f"lab:{{{whose}}}:meta"
        # Belt and braces on the expiry: the reaper removes it with the
        # sandbox, and if the reaper never runs, it still goes.
        commands += [("HSET", meta, *pairs), ("EXPIRE", meta, settings.sandbox_ttl * 2)]
    room = room_of(request)
    if room:
        commands += [("EXPIRE", f"lab:room:{room}", settings.room_ttl),
                     ("EXPIRE", f"lab:room:{room}:learners", settings.room_ttl)]
    return commands


def queue_activity(request: Request, pipe: Pipe, sandbox: str, widget: str) -> None:
    """Queue on `pipe` the writes that record a sandbox's last activity."""
    for command in activity_commands(request, sandbox, widget):
        pipe.execute_command(*command)


async def enter(request: Request, sandbox: str, widget: str) -> None:
    """Every check and record an action needs before it runs, in two round trips.

    The admission script (the sandbox cap; the sandbox counts as used from
    now on), then one pipeline: the rate counters and the activity record.
    Refused on the first limit passed. (The key cap is judged under the
    widget's lock, from the count its last action recorded.) The hot path of
    a learner in their own sandbox takes `server/web/entry.py` instead.
    """
    conn = request.app.state.conn
    await admit_request(request, sandbox, used=True)
    try:
        who = visitor_of(request)
    except NoSandbox:
        who = sandbox
    spent = limits.budgets(request, who, sandbox)
    async with conn.pipeline(transaction=False) as pipe:
        limits.queue_rates(pipe, spent)
        queue_activity(request, pipe, sandbox, widget)
        replies = await pipe.execute()
    limits.judge_rates(spent, replies[: 2 * len(spent) : 2])


__all__ = [
    "DEMO_REFUSAL",
    "NoSandbox",
    "Refused",
    "activity_commands",
    "activity_fields",
    "admit",
    "admit_request",
    "check_attempts",
    "check_demo",
    "check_origin",
    "client_address",
    "count_failed_attempt",
    "enter",
    "is_instructor",
    "noted",
    "queue_activity",
    "require_instructor",
    "room_of",
    "sandbox_of",
    "visitor_of",
]
