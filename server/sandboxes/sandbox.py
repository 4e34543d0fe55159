"""Sandboxes: one per visitor, named by a signed cookie. The id is inside every queue name
(`<sandbox>.<widget>`), so every `{…}` hashtag: queue names are built here, never taken from a request."""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable
from typing import Final

from itsdangerous import BadSignature, URLSafeSerializer, URLSafeTimedSerializer
from starlette.requests import Request
from starlette.responses import Response

from server.refusal import Refusal

COOKIE = "emqlab_sandbox"
# \A…\Z, not $: "s0123456789\n" is not an id, whichever of match/fullmatch a caller uses.
SANDBOX_RE = re.compile(r"\As[a-z0-9]{10}\Z")
# The site's own read-only sandbox (server/widgets/specimen.py). Eight letters: no visitor's id
# nor ACL pattern `~emq:{<id>.*` covers it, and SANDBOX_RE refuses it, so no cookie, class, watch,
# registry, reaper or reset sees it.
SPECIMEN: Final = "specimen"


class NoSandbox(Refusal):
    """The request carries no valid sandbox cookie."""

    status = 403


def new_id() -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "s" + "".join(secrets.choice(alphabet) for _ in range(10))


@functools.lru_cache(maxsize=8192)  # an action names its queues some ten times from one id; a raise is not kept
def queue_name(sandbox: str, *parts: str) -> str:
    """The queue a widget uses inside a sandbox, e.g. `s0a1b2c3d4e.fanin`."""
    if not SANDBOX_RE.fullmatch(sandbox) and sandbox != SPECIMEN:
        raise NoSandbox(f"not a sandbox id: {sandbox!r}")
    return ".".join((sandbox, *parts))


class SandboxCookie:
    def __init__(self, secret: str, secure: bool = False) -> None:
        self.serializer = URLSafeSerializer(secret, salt="emqlab-sandbox")
        self.secure = secure
        # A signature checked once per cookie value, not per request; lru_cache keeps no raise.
        self.parse: Callable[[str], str] = functools.lru_cache(maxsize=4096)(self._verify)

    def _verify(self, raw: str) -> str:
        """The sandbox id inside a cookie value; NoSandbox when it is not ours."""
        try:
            value = self.serializer.loads(raw)
        except BadSignature as exc:
            raise NoSandbox("the sandbox cookie is not one this site signed") from exc
        if not isinstance(value, str) or not SANDBOX_RE.fullmatch(value):
            raise NoSandbox("the sandbox cookie does not name a sandbox")
        return value

    def header(self, sandbox: str) -> str:
        """The Set-Cookie header value that names `sandbox` (for a middleware)."""
        carrier = Response()
        carrier.set_cookie(COOKIE, self.serializer.dumps(sandbox), max_age=30 * 24 * 3600, httponly=True,
                           samesite="strict", secure=self.secure, path="/")
        return carrier.headers["set-cookie"]


class SignedCookie:
    """A small signed, expiring cookie (a class joined, the instructor's sign-in…)."""

    def __init__(self, name: str, secret: str, salt: str, max_age: int, secure: bool = False) -> None:
        self.name = name
        self.serializer = URLSafeTimedSerializer(secret, salt=salt)
        self.max_age = max_age
        self.secure = secure

    def read(self, request: Request) -> object | None:
        """The signed value; None when absent, forged or expired."""
        raw = request.cookies.get(self.name)
        if not raw:
            return None
        try:
            value: object = self.serializer.loads(raw, max_age=self.max_age)
            return value
        except (BadSignature, ValueError, TypeError):
            return None

    def attach(self, response: Response, value: object) -> None:
        response.set_cookie(self.name, self.serializer.dumps(value), max_age=self.max_age, httponly=True,
                            samesite="strict", secure=self.secure, path="/")

    def clear(self, response: Response) -> None:
        response.delete_cookie(self.name, path="/", httponly=True, samesite="strict", secure=self.secure)
