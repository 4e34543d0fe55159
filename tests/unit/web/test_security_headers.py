"""Every answer carries the security headers; a private path is not cached;
an answer's own value of one of them is kept."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from server.sandboxes.sandbox import SandboxCookie
from server.web.middleware import CSP, Site


async def page(request: object) -> PlainTextResponse:
    return PlainTextResponse("a page")


async def framed(request: object) -> PlainTextResponse:
    return PlainTextResponse("its own", headers={"X-Frame-Options": "SAMEORIGIN", "Cache-Control": "max-age=60"})


async def answer(request: object) -> JSONResponse:
    return JSONResponse({"ok": True})


@pytest.fixture
def client() -> TestClient:
    app = Starlette(routes=[Route("/flows/x", page), Route("/static/own", framed),
                            Route("/api/widgets/x/state", answer), Route("/api/own", framed)])
    app.add_middleware(Site, cookie=SandboxCookie("a test secret"))
    return TestClient(app)


def test_a_page_carries_every_security_header_and_may_be_cached(client: TestClient) -> None:
    got = client.get("/flows/x").headers
    assert got["content-security-policy"] == CSP
    assert got["x-content-type-options"] == "nosniff"
    assert got["referrer-policy"] == "same-origin"
    assert got["x-frame-options"] == "DENY"
    assert "cache-control" not in got


def test_an_api_answer_is_never_stored(client: TestClient) -> None:
    got = client.get("/api/widgets/x/state")
    assert got.headers["cache-control"] == "no-store" and got.headers["x-frame-options"] == "DENY"
    assert got.json() == {"ok": True}


def test_an_answers_own_value_is_kept_and_not_doubled(client: TestClient) -> None:
    for path, cache in (("/static/own", "max-age=60"), ("/api/own", "max-age=60")):
        got = client.get(path).headers
        assert got.get_list("x-frame-options") == ["SAMEORIGIN"]
        assert got.get_list("cache-control") == [cache]
        assert got["content-security-policy"] == CSP
