"""Settings read from the environment, with the defaults a laptop wants.

Every limit of the site is here, one env var each (docs/LIMITS.md lists them).
A value that is not a whole number, or is out of range, stops the site at
start with a sentence naming the variable, rather than running unbounded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int, low: int = 0, high: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from exc
    if value < low or (high is not None and value > high):
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise SystemExit(f"{name} must be {span}, got {value}")
    return value


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"{name} must be 1 or 0 (true/false), got {raw!r}")


ROOM_MEMBERS = 20  # a room's default rate budget, in visitors' budgets


@dataclass(frozen=True)
class Settings:
    valkey_url: str | None = None
    # Signs the cookies. Unset: a random secret kept in a file of the site's
    # state folder (server/web/secret.py), so every worker of one site shares
    # it and cookies survive a site restart, a Valkey restart and FLUSHALL.
    secret: str | None = None
    # Where that file lives; unset: $XDG_STATE_HOME/emqlab or ~/.local/state/emqlab.
    state_dir: str | None = None
    # Enables /instructor. Unset: the instructor pages answer 403.
    instructor_token: str | None = None
    # An instructor sign-in lasts this many seconds.
    instructor_session: int = 12 * 3600
    # Mark cookies Secure (set this when the site is served over HTTPS).
    secure_cookies: bool = False
    # Behind a proxy: the origin browsers see (e.g. https://flows.example.org),
    # which state changes must come from. Unset: the request's own scheme and Host.
    public_origin: str | None = None
    # Behind a proxy: take the client address from X-Forwarded-For (its last
    # entry, the one the proxy added). Unset, the header is ignored: anyone can send it.
    trust_forwarded_for: bool = False

    # -- lifecycle -------------------------------------------------------------
    # Idle sandboxes expire after this many seconds; their keys go with them.
    sandbox_ttl: int = 3600
    # The reaper's round: expire idle sandboxes and rooms, remove orphan keys.
    reap_every: int = 30
    # At most this many live sandboxes; a new visitor past it gets a clear 503.
    max_sandboxes: int = 5000
    # Actions are refused (press Reset) while a sandbox holds more keys.
    max_keys_per_sandbox: int = 2000
    # A room lives this many seconds after its last activity.
    room_ttl: int = 8 * 3600
    max_rooms: int = 200
    # New sandboxes one client address may open per 10 minutes (a class behind
    # one NAT counts as one address: keep it well above a class's size).
    address_sandboxes: int = 200
    # When the site is full, a sandbox that never ran an action and has been
    # idle this many seconds is evicted to make room for a new visitor.
    unused_idle: int = 60

    # -- request bodies (the ledger's custom batch reads the three max_*) -------
    max_children: int = 16
    max_flows: int = 16
    max_payload_bytes: int = 1024
    # Any action body larger than this is refused with 413 before it is parsed.
    max_body_bytes: int = 16 * 1024

    # -- rates -----------------------------------------------------------------
    # Actions per visitor per 10 seconds.
    rate_limit: int = 100
    # Actions per client address per 10 seconds (all its visitors together);
    # unset: 10 visitors' worth (0 when EMQLAB_RATE_LIMIT is 0).
    address_rate_limit: int = 1000
    # Actions in one room's shared sandbox per 10 seconds; unset: ROOM_MEMBERS
    # visitors' worth, so a few members at full speed cannot spend it all.
    room_rate_limit: int = 2000
    # Sign-in and room-join attempts per client address per minute.
    attempt_limit: int = 20

    # -- the live stream -------------------------------------------------------
    # An SSE stream is closed after this many seconds; the browser reconnects
    # and gets a fresh snapshot, so no stream lives (and leaks) forever.
    stream_lifetime: int = 600
    stream_ping: int = 15
    stream_send_timeout: int = 10
    extra: dict[str, str] = field(default_factory=dict)

    def check(self) -> Settings:
        """Refuse settings that contradict each other (SystemExit with a sentence)."""
        if self.sandbox_ttl < self.stream_lifetime:
            raise SystemExit(
                f"EMQLAB_SANDBOX_TTL ({self.sandbox_ttl} s) is shorter than EMQLAB_STREAM_LIFETIME "
                f"({self.stream_lifetime} s): the reaper would remove sandboxes of pages that are still open. "
                "Raise EMQLAB_SANDBOX_TTL or lower EMQLAB_STREAM_LIFETIME."
            )
        if self.public_origin is not None and not self.public_origin.startswith(("http://", "https://")):
            raise SystemExit(f"EMQLAB_PUBLIC_ORIGIN must start with http:// or https://, got {self.public_origin!r}")
        return self

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            valkey_url=os.environ.get("EMQLAB_VALKEY_URL") or None,
            secret=os.environ.get("EMQLAB_SECRET") or None,
            instructor_token=os.environ.get("EMQLAB_INSTRUCTOR_TOKEN") or None,
            instructor_session=_int("EMQLAB_INSTRUCTOR_SESSION", 12 * 3600, low=60),
            secure_cookies=_flag("EMQLAB_SECURE_COOKIES", False),
            state_dir=os.environ.get("EMQLAB_STATE_DIR") or None,
            public_origin=(os.environ.get("EMQLAB_PUBLIC_ORIGIN") or "").rstrip("/") or None,
            trust_forwarded_for=_flag("EMQLAB_TRUST_FORWARDED_FOR", False),
            sandbox_ttl=_int("EMQLAB_SANDBOX_TTL", 3600, low=10),
            reap_every=_int("EMQLAB_REAP_EVERY", 30, low=1),
            max_sandboxes=_int("EMQLAB_MAX_SANDBOXES", 5000, low=1),
            max_keys_per_sandbox=_int("EMQLAB_MAX_KEYS_PER_SANDBOX", 2000, low=50),
            room_ttl=_int("EMQLAB_ROOM_TTL", 8 * 3600, low=60),
            max_rooms=_int("EMQLAB_MAX_ROOMS", 200, low=1),
            address_sandboxes=_int("EMQLAB_ADDRESS_SANDBOXES", 200),
            unused_idle=_int("EMQLAB_UNUSED_IDLE", 60),
            max_children=_int("EMQLAB_MAX_CHILDREN", 16, low=1, high=1000),
            max_flows=_int("EMQLAB_MAX_FLOWS", 16, low=1, high=1000),
            max_payload_bytes=_int("EMQLAB_MAX_PAYLOAD_BYTES", 1024, low=1, high=1024 * 1024),
            max_body_bytes=_int("EMQLAB_MAX_BODY_BYTES", 16 * 1024, low=1024, high=1024 * 1024),
            rate_limit=(rate := _int("EMQLAB_RATE_LIMIT", 100)),
            address_rate_limit=_int("EMQLAB_ADDRESS_RATE_LIMIT", 10 * rate),
            room_rate_limit=_int("EMQLAB_ROOM_RATE_LIMIT", ROOM_MEMBERS * rate),
            attempt_limit=_int("EMQLAB_ATTEMPT_LIMIT", 20),
            stream_lifetime=_int("EMQLAB_STREAM_LIFETIME", 600, low=5),
            stream_ping=_int("EMQLAB_STREAM_PING", 15, low=1),
            stream_send_timeout=_int("EMQLAB_STREAM_SEND_TIMEOUT", 10, low=1),
        ).check()


_current: Settings | None = None


def install(settings: Settings) -> None:
    """Make these the settings `current()` answers (create_app calls it)."""
    global _current  # noqa: PLW0603 -- one value per process, set once by create_app
    _current = settings


def current() -> Settings:
    """The running site's settings, for code that has no request (widgets)."""
    return _current if _current is not None else Settings.from_env()
