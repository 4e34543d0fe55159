"""The Cookie header as the middlewares read it: parsed once per header value."""

from __future__ import annotations

from http.cookies import SimpleCookie

import pytest

from server.web import middleware
from server.web.middleware import cookie_value


def scope(*headers: tuple[bytes, bytes]) -> dict[str, object]:
    return {"type": "http", "headers": list(headers)}


def test_each_cookie_of_a_header_is_read_by_name() -> None:
    header = (b"cookie", b'emqlab_sandbox=abc.def; emqlab_room="R1"; other=x')
    assert cookie_value(scope(header)) == "abc.def"
    assert cookie_value(scope(header), "emqlab_room") == "R1"
    assert cookie_value(scope(header), "missing") is None
    assert cookie_value(scope((b"host", b"t"))) is None


@pytest.mark.parametrize("garbled", [b"emqlab_sandbox", b"=;=;", b"\xff\xfe=\x00", b'a="unclosed'])
def test_a_garbled_header_is_no_cookie_and_no_error(garbled: bytes) -> None:
    assert cookie_value(scope((b"cookie", garbled))) in (None, "")


def test_one_header_is_parsed_once_however_many_cookies_a_request_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    middleware._cookies.cache_clear()
    loads: list[str] = []
    real = SimpleCookie.load

    def counted(jar: SimpleCookie, raw: str) -> None:
        loads.append(raw)
        real(jar, raw)

    monkeypatch.setattr(SimpleCookie, "load", counted)
    header = (b"cookie", b"emqlab_sandbox=v1; emqlab_room=R2")
    for name in ("emqlab_sandbox", "emqlab_room", "emqlab_watch") * 3:
        cookie_value(scope(header), name)
    assert loads == ["emqlab_sandbox=v1; emqlab_room=R2"]
    with pytest.raises(TypeError):  # every request shares the mapping: nobody may change it
        middleware._cookies(header[1])["emqlab_sandbox"] = "forged"  # type: ignore[index]
