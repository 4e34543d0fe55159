"""A sandbox id is checked whole: a trailing newline makes it not an id."""

from __future__ import annotations

import pytest

from server.sandboxes.sandbox import SANDBOX_RE, SandboxCookie

SECRET = "reliability-test-secret"


def test_a_sandbox_id_with_a_trailing_newline_is_not_an_id() -> None:
    assert SANDBOX_RE.match("s0123456789") and SANDBOX_RE.fullmatch("s0123456789")
    assert not SANDBOX_RE.match("s0123456789\n")
    with pytest.raises(Exception, match="does not name a sandbox"):
        SandboxCookie(SECRET).parse(SandboxCookie(SECRET).serializer.dumps("s0123456789\n"))


def test_a_cookie_is_checked_once_and_a_forged_one_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    cookie = SandboxCookie(SECRET)
    good = cookie.serializer.dumps("s0123456789")
    forged = SandboxCookie("another-secret").serializer.dumps("s0123456789")
    checks: list[str] = []
    loads = cookie.serializer.loads

    def counted(raw: str) -> object:
        checks.append(raw)
        return loads(raw)

    monkeypatch.setattr(cookie.serializer, "loads", counted)
    for _ in range(3):
        assert cookie.parse(good) == "s0123456789"
        with pytest.raises(Exception, match="not one this site signed"):
            cookie.parse(forged)
    assert checks.count(good) == 1  # the signature of a good cookie is checked once
    assert checks.count(forged) == 3  # a refusal is never remembered
