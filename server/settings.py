"""Settings read from the environment, with the defaults a laptop wants.

Every limit of the site is here, one env var each (docs/LIMITS.md lists them).
A value that is not a whole number, or is out of range, stops the site at
start with a sentence naming the variable, rather than running unbounded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, cast


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


def truth(raw: str) -> bool | None:
    """1/true/yes/on -> True, 0/false/no/off -> False (any case); None for anything else.
    The one reading of a yes-or-no word: settings, form fields, EMQLAB_VALKEY_CLUSTER."""
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = truth(raw)
    if value is None:
        raise SystemExit(f"{name} must be 1 or 0 (true/false), got {raw!r}")
    return value


ROOM_MEMBERS = 20  # a room's default rate budget, in visitors' budgets


def whole(default: int, low: int = 0, high: int | None = None, per_rate: int | None = None) -> Any:
    """A whole-number setting: its default, and the range its variable must be in.
    `per_rate`: when the variable is unset, that many times EMQLAB_RATE_LIMIT."""
    return field(default=default, metadata={"low": low, "high": high, "per_rate": per_rate})


@dataclass(frozen=True)
class Settings:
    # Signs the cookies. Unset: a random secret kept in a file of the site's
    # state folder (server/web/secret.py), so every worker of one site shares
    # it and cookies survive a site restart, a Valkey restart and FLUSHALL.
    secret: str | None = None
    # Where that file lives; unset: $XDG_STATE_HOME/emqlab or ~/.local/state/emqlab.
    state_dir: str | None = None
    # Enables /instructor. Unset: the instructor pages answer 403.
    instructor_token: str | None = None
    # An instructor sign-in lasts this many seconds.
    instructor_session: int = whole(12 * 3600, low=60)
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
    sandbox_ttl: int = whole(3600, low=10)
    # The reaper's round: expire idle sandboxes and rooms, remove orphan keys.
    reap_every: int = whole(30, low=1)
    # At most this many live sandboxes; a new visitor past it gets a clear 503.
    max_sandboxes: int = whole(5000, low=1)
    # Actions are refused (press Reset) while a sandbox holds more keys.
    max_keys_per_sandbox: int = whole(2000, low=50)
    # A room lives this many seconds after its last activity.
    room_ttl: int = whole(8 * 3600, low=60)
    max_rooms: int = whole(200, low=1)
    # New sandboxes one client address may open per 10 minutes (a class behind
    # one NAT counts as one address: keep it well above a class's size).
    address_sandboxes: int = whole(200)
    # When the site is full, a sandbox that never ran an action and has been
    # idle this many seconds is evicted to make room for a new visitor.
    unused_idle: int = whole(60)

    # -- request bodies (the ledger's custom batch reads the three max_*) -------
    max_children: int = whole(16, low=1, high=1000)
    max_flows: int = whole(16, low=1, high=1000)
    max_payload_bytes: int = whole(1024, low=1, high=1024 * 1024)
    # Any action body larger than this is refused with 413 before it is parsed.
    max_body_bytes: int = whole(16 * 1024, low=1024, high=1024 * 1024)

    # -- rates -----------------------------------------------------------------
    # Actions per visitor per 10 seconds.
    rate_limit: int = whole(100)
    # Actions per client address per 10 seconds (all its visitors together);
    # unset: 10 visitors' worth (0 when EMQLAB_RATE_LIMIT is 0).
    address_rate_limit: int = whole(1000, per_rate=10)
    # Actions in one room's shared sandbox per 10 seconds; unset: ROOM_MEMBERS
    # visitors' worth, so a few members at full speed cannot spend it all.
    room_rate_limit: int = whole(2000, per_rate=ROOM_MEMBERS)
    # Sign-in and room-join attempts per client address per minute.
    attempt_limit: int = whole(20)

    # -- the live stream -------------------------------------------------------
    # An SSE stream is closed after this many seconds; the browser reconnects
    # and gets a fresh snapshot, so no stream lives (and leaks) forever.
    stream_lifetime: int = whole(600, low=5)
    stream_ping: int = whole(15, low=1)
    stream_send_timeout: int = whole(10, low=1)

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
        """Each field from EMQLAB_<FIELD NAME>, its default and range the field's own."""
        values: dict[str, Any] = {}
        for spec in fields(cls):
            env, default = "EMQLAB_" + spec.name.upper(), cast(Any, spec.default)
            if spec.type == "int":
                per_rate = spec.metadata.get("per_rate")
                if per_rate is not None:
                    default = per_rate * values["rate_limit"]
                values[spec.name] = _int(env, default, spec.metadata["low"], spec.metadata["high"])
            elif spec.type == "bool":
                values[spec.name] = _flag(env, default)
            else:
                values[spec.name] = os.environ.get(env) or None
        values["public_origin"] = (values["public_origin"] or "").rstrip("/") or None
        return cls(**values).check()


_current: Settings | None = None


def install(settings: Settings) -> None:
    """Make these the settings `current()` answers (create_app calls it)."""
    global _current  # noqa: PLW0603 -- one value per process, set once by create_app
    _current = settings


def current() -> Settings:
    """The running site's settings, for code that has no request (widgets)."""
    return _current if _current is not None else Settings.from_env()
