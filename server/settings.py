"""Settings read from the environment, with the defaults a laptop wants."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from exc


@dataclass(frozen=True)
class Settings:
    valkey_url: str | None = None
    # Signs the sandbox cookie. Unset: a random secret is kept in Valkey, so
    # every worker of one site shares it and cookies survive a site restart.
    secret: str | None = None
    instructor_token: str | None = None
    # Idle sandboxes expire after this many seconds; their keys go with them.
    sandbox_ttl: int = 3600
    max_sandboxes: int = 5000
    max_children: int = 16
    max_flows: int = 16
    max_payload_bytes: int = 1024
    # Actions per sandbox per 10 seconds.
    rate_limit: int = 100
    # An SSE stream is closed after this many seconds; the browser reconnects
    # and gets a fresh snapshot, so no stream lives (and leaks) forever.
    stream_lifetime: int = 600
    stream_ping: int = 15
    stream_send_timeout: int = 10
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls) -> "Settings":
        return cls(
            valkey_url=os.environ.get("EMQLAB_VALKEY_URL") or None,
            secret=os.environ.get("EMQLAB_SECRET") or None,
            instructor_token=os.environ.get("EMQLAB_INSTRUCTOR_TOKEN") or None,
            sandbox_ttl=_int("EMQLAB_SANDBOX_TTL", 3600),
            max_sandboxes=_int("EMQLAB_MAX_SANDBOXES", 5000),
            max_children=_int("EMQLAB_MAX_CHILDREN", 16),
            max_flows=_int("EMQLAB_MAX_FLOWS", 16),
            max_payload_bytes=_int("EMQLAB_MAX_PAYLOAD_BYTES", 1024),
            rate_limit=_int("EMQLAB_RATE_LIMIT", 100),
            stream_lifetime=_int("EMQLAB_STREAM_LIFETIME", 600),
        )
