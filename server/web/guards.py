"""The way in: every request meets its guards here, once, before any widget.

`enter` answers who asks and where they act (`Entry`), or raises `Refused`: origin, the signed
sandbox cookie (never the body or the URL), the instructor, the class (its mode read from Valkey
on every request, so a change holds at once on any worker) or a Watch, then the rates.

Actions, reads and streams are counted in each worker's memory, so a flood is turned away before it
reaches Valkey (with N workers a client may get N budgets; they are sized for that), and a worker killed
mid-stream leaves no count behind. Failed sign-ins and joins are counted in Valkey, shared by every
worker, BEFORE anything is compared: per visitor, then per address, so one guesser cannot use up a
classroom's allowance.

The instructor's sign-in sessions are kept by `sessions`.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from redis.exceptions import RedisError
from starlette.requests import Request

from server.refusal import Refusal
from server.sandboxes import rooms
from server.sandboxes.sandbox import COOKIE, SANDBOX_RE, NoSandbox
from server.web import attempts
from server.web.services import services
from server.web.sessions import session_of

INSTRUCTOR_COOKIE = "emqlab_instructor"
DEMO_REFUSAL = "demo mode: only the instructor acts in this class; you are watching the instructor's sandbox"
WATCH_REFUSAL = "you are watching a learner's sandbox, read-only: stop watching to act"
# Said to anyone whose browser holds a class's cookie, in a class or not (it may have closed): no "your class"
ROOM_DOWN = ("Valkey is unreachable right now, so the site cannot check the class this browser joined "
             "(it may have closed); the page recovers when Valkey returns.")


class Refused(Refusal):
    """A guard's refusal: `status` (4xx, or 503) and a sentence; a client over a budget, or a Valkey
    away, may try again in 10 s."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message, status=status, retry_after=10 if status in (429, 503) else None)


@dataclass(frozen=True)
class Entry:
    visitor: str  # their own sandbox: their identity and their record
    sandbox: str  # the sandbox they act in (their own, or their class's)
    instructor: bool = False
    readonly: bool = False  # a demo's learner, an instructor's Watch
    room: str | None = None
    mode: str = "own"
    name: str = ""  # a class member's display name
    watching: str | None = None  # the learner an instructor watches
    tab: str = ""  # the page that asks (X-Emqlab-Tab)
    ask: rooms.Ask | None = None  # the question the instructor put to the class, if any
    closed: bool = False  # the class the browser joined has closed: its banner says so

    def where(self) -> dict[str, object]:
        """The class (or the Watch) an answer comes from: where it only watches, the page disables its controls."""
        if self.watching:
            return {"room": {"watching": self.watching, "readonly": True, "mode": "watch"}}
        if self.room is None:
            return {}
        return {"room": {"code": self.room, "mode": self.mode, "demo": self.mode == "demo",
                         "readonly": self.readonly}}


async def enter(request: Request, *, write: bool, counts: str = "actions") -> Entry:
    """The guards of one request; `counts` is the budget it spends: "actions", "reads", or "" for none."""
    if write:
        check_origin(request)
    visitor = visitor_of(request)
    instructor = is_instructor(request)
    tab = "".join(ch for ch in request.headers.get("x-emqlab-tab", "")[:32] if ch.isalnum())
    entry = Entry(visitor, visitor, instructor, tab=tab)
    watched = services(request).cookies.watch.read(request) if instructor else None
    if isinstance(watched, str) and SANDBOX_RE.fullmatch(watched):
        entry = replace(entry, sandbox=watched, readonly=True, watching=watched)
    else:
        entry = await _in_class(request, entry)
    if write and entry.readonly:
        raise Refused(403, WATCH_REFUSAL if entry.watching else DEMO_REFUSAL)
    settings, windows = services(request).settings, services(request).windows
    if counts == "reads":
        windows.spend(f"r:{entry.visitor}", settings.read_limit, "per visitor", "reads")
    elif counts == "actions":
        windows.spend(f"a:{entry.visitor}", settings.rate_limit, "per visitor")
        if entry.room is not None:
            windows.spend(f"c:{entry.room}", settings.room_actions, "in this class")
        else:  # a class behind one address is counted as a class, not as that address
            windows.spend(f"ip:{client_address(request)}", settings.address_actions, "from your address")
    return entry


async def _in_class(request: Request, entry: Entry) -> Entry:
    code = services(request).cookies.room.read(request)
    if code is None:
        return entry
    if not isinstance(code, str):
        raise Refused(403, "the class cookie is not one this site signed: join your class again at /room")
    try:
        room, member, name = await rooms.membership(services(request).conn, code, entry.visitor)
    except (RedisError, OSError) as exc:
        raise Refused(503, ROOM_DOWN) from exc
    if room is None or not member:  # the class closed, or the learner left it: their own sandbox again
        return replace(entry, closed=room is None)
    sandbox, readonly = room.acting(entry.visitor)
    return replace(entry, sandbox=sandbox, readonly=readonly and not entry.instructor, room=room.code,
                   mode=room.mode, name=name, ask=room.ask)


def visitor_of(request: Request) -> str:
    """The visitor's own sandbox id, from the signed cookie (or the one the middleware just named)."""
    noted = request.scope.get("state", {}).get("sandbox")
    if noted:
        return str(noted)
    raw = request.cookies.get(COOKIE)
    if not raw:
        raise Refused(403, "no sandbox cookie: open a page of the course first")
    try:
        return str(services(request).cookies.sandbox.parse(raw))
    except NoSandbox as exc:
        raise Refused(403, str(exc)) from exc


def token_matches(given: object, token: str) -> bool:
    return isinstance(given, str) and hmac.compare_digest(given.encode(), token.encode())


def bearer_of(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else None


def signed_in(request: Request) -> bool:
    """A live sign-in session (`Sessions`; no token compared: nothing to guess here)."""
    return bool(services(request).settings.instructor_token) and session_of(request) is not None


def is_instructor(request: Request) -> bool:
    """Signed in, or a matching Bearer token (uncounted: `require_instructor` counts failures)."""
    token = services(request).settings.instructor_token
    return bool(token) and (signed_in(request) or token_matches(bearer_of(request), token or ""))


async def require_instructor(request: Request) -> None:
    """403 when instructors are off or the Origin is foreign; 429 past the failed-attempt limit; else 401."""
    if not services(request).settings.instructor_token:
        raise Refused(403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN")
    check_origin(request)
    if signed_in(request):
        return
    given = bearer_of(request)
    if given is None:
        raise Refused(401, "sign in as the instructor first (POST /instructor/sign-in with the token)")
    await check_token(request, given)


@contextlib.asynccontextmanager
async def attempt(request: Request, kind: str) -> AsyncIterator[None]:
    """Count this attempt BEFORE anything is compared, per visitor then per address (each kind apart;
    429 past either limit), and give it back when the block ends unrefused: it was right. The visitor
    is the signed sandbox cookie, else every cookieless caller of the address together (dropping the
    cookie buys no fresh allowance)."""
    settings, address = services(request).settings, client_address(request)
    visitor = "anon:" + address
    if raw := request.cookies.get(COOKIE):
        with contextlib.suppress(NoSandbox):
            visitor = "v:" + str(services(request).cookies.sandbox.parse(raw))
    counted, past = await attempts.take(services(request).conn, kind, [
        (visitor, settings.attempt_limit), ("a:" + address, settings.address_attempts)])
    if past == 0:
        raise Refused(429, f"too many failed attempts: at most {settings.attempt_limit} in any minute from one "
                           "visitor; wait a minute and try again")
    if past is not None:
        raise Refused(429, f"too many failed attempts from your address: at most {settings.address_attempts} "
                           "in any minute, whoever makes them; wait a minute and try again")
    yield
    await attempts.give_back(services(request).conn, counted)


async def check_token(request: Request, given: str) -> None:
    """Compare a token only while this visitor and this address are under their failed-attempt limits."""
    async with attempt(request, "sign-in"):
        if not token_matches(given, services(request).settings.instructor_token or ""):
            raise Refused(401, "that is not the instructor token")


@functools.lru_cache(maxsize=256)
def _origin_of(origin: str) -> str:
    try:
        parts = urlsplit(origin)
        return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""
    except ValueError:
        return ""


def check_origin(request: Request) -> None:
    """Refuse a state change sent from a page of another site (scheme, host and port)."""
    origin = request.headers.get("origin")
    if origin is None:
        if request.headers.get("sec-fetch-site", "") == "cross-site":
            raise Refused(403, "cross-site request refused")
        return
    # the site's pages are at the configured public origin (behind a proxy), else at the request's
    scheme, host = request.scope.get("scheme", "http"), request.headers.get("host", "")
    site = services(request).settings.origin or f"{scheme}://{host}"
    if _origin_of(origin) != site.lower() or not _origin_of(origin):
        shown = origin if len(origin) <= 100 and origin.isprintable() else "(unreadable)"
        raise Refused(403, f"cross-site request refused: Origin {shown} is not this site")


WINDOW = 10  # seconds
REMEMBERED = 50_000  # counters one worker keeps (oldest dropped first)


class Windows:
    def __init__(self) -> None:
        self.counts: OrderedDict[tuple[str, int], int] = OrderedDict()

    def spend(self, name: str, cap: int, whose: str, what: str = "actions") -> None:
        """Count one; a 429 when `name` is past `cap` in this window (0: no limit)."""
        if cap <= 0:
            return
        key = (name, int(time.monotonic() // WINDOW))
        count = self.counts.get(key, 0) + 1
        self.counts[key] = count
        self.counts.move_to_end(key)
        while len(self.counts) > REMEMBERED:
            self.counts.popitem(last=False)
        if count > cap:
            raise Refused(429, f"too many {what}: at most {cap} every {WINDOW} seconds {whose}; wait a moment")


class StreamSlots:
    """Streams one visitor may have open: a thousand on one cookie took a site from 63 to 175 MB."""

    def __init__(self) -> None:
        self.open: dict[str, int] = {}

    def take(self, visitor: str, cap: int) -> Callable[[], None]:
        """A place for one more stream of `visitor` (a 429 past `cap`; 0: no cap), and how to give it
        back: safe to call more than once, as every way a stream ends calls it."""
        if 0 < cap <= self.open.get(visitor, 0):
            raise Refused(429, f"too many open streams: at most {cap} pages of this site may be open at once "
                          "for one visitor; close some tabs and reload this one")
        self.open[visitor] = self.open.get(visitor, 0) + 1
        held = [True]

        def release() -> None:
            if held:
                held.clear()
                self.open[visitor] -= 1
                if not self.open[visitor]:
                    del self.open[visitor]

        return release


def client_address(request: Request) -> str:
    """The socket's peer, or the last `X-Forwarded-For` entry (the proxy's own) when one is trusted."""
    host = request.client.host if request.client else "unknown"
    if services(request).settings.trust_forwarded_for:
        last = request.headers.get("x-forwarded-for", "").rsplit(",", 1)[-1].strip()
        host = last or host
    return "".join(ch for ch in host if ch.isalnum() or ch in ".:-")[:64] or "unknown"
