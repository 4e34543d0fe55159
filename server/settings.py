"""Settings read from the environment (`EMQLAB_<FIELD>`), each with its range.

Every limit of the site is a field here (docs/LIMITS.md lists them). A value
that is not of the field's type, or is out of its range, stops the site at
start with a sentence naming the variable, rather than running unbounded.
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

Whole = Annotated[int, Field(ge=0)]


def truth(raw: str) -> bool | None:
    """1/true/yes/on -> True, 0/false/no/off -> False (any case); None otherwise."""
    word = raw.strip().lower()
    return True if word in ("1", "true", "yes", "on") else False if word in ("0", "false", "no", "off") else None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EMQLAB_", frozen=True, extra="ignore", env_ignore_empty=True)

    # -- where the site keeps what lasts ------------------------------------------
    # The data directory: the managed Valkey's files and the cookie secret.
    data_dir: str = ".emqlab"
    # A temporary data directory and no persistence (`emqlab serve --ephemeral`).
    ephemeral: bool = False
    # Signs the cookies. Unset: a random secret kept in the data directory.
    secret: str | None = None
    # Enables /instructor (at least 16 characters). Unset: /instructor answers 403.
    instructor_token: str | None = Field(default=None, min_length=16)
    instructor_session: int = Field(default=12 * 3600, ge=60)  # seconds a sign-in lasts
    secure_cookies: bool = False  # mark cookies Secure (behind HTTPS)
    # Behind a proxy: the origin browsers see, which state changes must come from.
    public_origin: str | None = Field(default=None, pattern=r"^https?://")
    # Behind a proxy: take the client address from X-Forwarded-For (its last entry).
    trust_forwarded_for: bool = False

    # -- sandboxes and classes --------------------------------------------------------
    sandbox_ttl: int = Field(default=3600, ge=10)  # idle sandboxes expire after this
    reap_every: int = Field(default=30, ge=1)  # seconds between the reaper's rounds
    max_sandboxes: int = Field(default=5000, ge=1)  # live sandboxes at most (503 past it)
    address_sandboxes: Whole = 200  # new sandboxes per address per 10 minutes (0: no limit)
    unused_idle: Whole = 60  # a never-used sandbox idle this long may be evicted when full
    room_ttl: int = Field(default=8 * 3600, ge=60)  # a class lives this long after its last activity
    max_rooms: int = Field(default=200, ge=1)
    results_days: int = Field(default=7, ge=1)  # a closed class's results stay downloadable

    # -- what one learner may cost ----------------------------------------------------
    sandbox_bytes: int = Field(default=1 << 20, ge=4096)  # bytes a sandbox's console writes may add
    snapshot_bytes: int = Field(default=64 * 1024, ge=4096)  # a snapshot sent to a page stays under this
    max_children: int = Field(default=16, ge=1, le=1000)
    max_flows: int = Field(default=16, ge=1, le=1000)
    max_payload_bytes: int = Field(default=1024, ge=1, le=1 << 20)
    max_body_bytes: int = Field(default=16 * 1024, ge=1024, le=1 << 20)

    # -- rates, per 10 seconds, counted by each worker (0: no limit) -------------------
    rate_limit: Whole = 100  # actions per visitor
    read_limit: Whole = 200  # state reads and page loads per visitor
    address_rate_limit: Whole | None = None  # actions per address; unset: 10 visitors' worth
    room_rate_limit: Whole | None = None  # actions per class; unset: 20 visitors' worth
    # failed sign-ins and failed room joins per minute, in Valkey, each kind counted apart:
    attempt_limit: Whole = 20  # per visitor (a caller without a cookie: all such of one address)
    address_attempt_limit: Whole | None = None  # per address, whatever the cookies; unset: 10 visitors' worth

    # -- the live stream --------------------------------------------------------------
    stream_lifetime: int = Field(default=600, ge=5)  # seconds; the browser reconnects after
    stream_ping: int = Field(default=15, ge=1)
    stream_send_timeout: int = Field(default=10, ge=1)
    streams_per_visitor: Whole = 16  # streams one visitor holds open at once, per worker (0: no cap)
    # an open page counts its visitor online this long past its stream's last beat (3 beats a life)
    presence_ttl: int = Field(default=45, ge=3, le=60)

    # (the exercises' graders read their own settings: server/exercises/settings.py)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.sandbox_ttl < self.stream_lifetime:
            raise ValueError(
                f"EMQLAB_SANDBOX_TTL ({self.sandbox_ttl} s) is shorter than EMQLAB_STREAM_LIFETIME "
                f"({self.stream_lifetime} s): the reaper would remove sandboxes of pages still open")
        return self

    @property
    def address_actions(self) -> int:
        return self.address_rate_limit if self.address_rate_limit is not None else 10 * self.rate_limit

    @property
    def address_attempts(self) -> int:
        return self.address_attempt_limit if self.address_attempt_limit is not None else 10 * self.attempt_limit

    @property
    def room_actions(self) -> int:
        return self.room_rate_limit if self.room_rate_limit is not None else 20 * self.rate_limit

    @property
    def origin(self) -> str | None:
        return self.public_origin.rstrip("/") if self.public_origin else None

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        """The environment's settings; SystemExit naming the variable when one is wrong."""
        try:
            return cls(**overrides)  # type: ignore[arg-type]
        except ValidationError as exc:
            said = []
            for error in exc.errors():
                where = "EMQLAB_" + "_".join(str(p) for p in error["loc"]).upper() if error["loc"] else "settings"
                said.append(f"{where}: {error['msg']}")
            raise SystemExit("the site cannot start: " + "; ".join(said)) from None
