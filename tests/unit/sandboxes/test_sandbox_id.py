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
