"""The instructor's token cannot be guessed (issue 28, item 6): past an
address's failed-attempt limit the token is not compared at all, however
many guesses arrive at once; another address is unaffected; an instructor
already signed in stays signed in.

The sign-in route is not on main yet (the instructor pages are being ported),
so the guard every sign-in calls (`guards.check_token`, and
`guards.require_instructor` for a Bearer token) runs here in a small app of
the test's own, with the site's real settings and a real Valkey, where the
failed attempts are counted for every worker.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from server.emq.wire import Conn
from server.sandboxes.sandbox import SignedCookie
from server.settings import Settings
from server.web import attempts, guards, sessions
from server.web.services import services
from tests import services_stub

TOKEN = "the-instructor-token-16+"
SECRET = "token-test-secret"
LIMIT = 20


def guarded_app(conn: Conn) -> Starlette:
    async def sign_in(request: Request) -> JSONResponse:
        try:
            given = (await request.json()).get("token", "")
            await guards.check_token(request, str(given))
        except guards.Refused as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        response = JSONResponse({"ok": True})
        found = services(request)
        found.cookies.instructor.attach(response, await found.sessions.open(conn))
        return response

    async def overview(request: Request) -> JSONResponse:
        try:
            await guards.require_instructor(request)
        except guards.Refused as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route("/sign-in", sign_in, methods=["POST"]), Route("/overview", overview)],
                    middleware=[Middleware(sessions.Resolve, cookie_name=guards.INSTRUCTOR_COOKIE)])
    return services_stub.on(
        app, sessions=sessions.Sessions(SECRET, TOKEN, 3600), conn=conn,
        settings=Settings(instructor_token=TOKEN, attempt_limit=LIMIT),
        cookies=services_stub.cookies(
            instructor=SignedCookie(guards.INSTRUCTOR_COOKIE, SECRET, "emqlab-instructor", 3600)))


def from_address(app: Starlette, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://lab.example", timeout=20)


async def at_once(calls: list[Any], width: int = 50) -> list[int]:
    gate = asyncio.Semaphore(width)

    async def one(call: Any) -> int:
        async with gate:
            return int((await call).status_code)

    return list(await asyncio.gather(*(one(c) for c in calls)))


async def test_300_wrong_tokens_at_once_then_the_right_one_from_that_address_is_refused_while_another_signs_in(
    conn: Conn,
) -> None:
    app = guarded_app(conn)
    async with from_address(app, "127.0.0.2") as guesser, from_address(app, "127.0.0.3") as other:
        codes = await at_once([guesser.post("/sign-in", json={"token": f"guess-{n:04d}-padding"}) for n in range(300)])
        # the limit is consulted before any token is compared: exactly LIMIT guesses were looked at
        assert (codes.count(401), codes.count(429)) == (LIMIT, 300 - LIMIT)
        right = await guesser.post("/sign-in", json={"token": TOKEN})
        assert right.status_code == 429 and "too many failed attempts" in right.json()["error"]
        bearer = await guesser.get("/overview", headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 429
        signed = await other.post("/sign-in", json={"token": TOKEN})
        assert signed.status_code == 200, signed.text


async def test_bearer_guesses_count_against_the_same_limit(conn: Conn) -> None:
    app = guarded_app(conn)
    async with from_address(app, "127.0.0.4") as guesser:
        codes = await at_once([guesser.get("/overview", headers={"Authorization": f"Bearer no-{n}-of-sixteen"})
                               for n in range(LIMIT + 8)], width=8)
        assert (codes.count(401), codes.count(429)) == (LIMIT, 8)
        assert (await guesser.post("/sign-in", json={"token": "one-more-guess-xx"})).status_code == 429


async def test_an_instructor_signed_in_before_the_flood_stays_signed_in(conn: Conn) -> None:
    app = guarded_app(conn)
    async with from_address(app, "127.0.0.5") as instructor, from_address(app, "127.0.0.5") as guesser:
        assert (await instructor.post("/sign-in", json={"token": TOKEN})).status_code == 200
        await at_once([guesser.post("/sign-in", json={"token": f"guess-{n}-of-sixteen"}) for n in range(LIMIT + 5)])
        assert (await guesser.post("/sign-in", json={"token": TOKEN})).status_code == 429
        assert (await instructor.get("/overview")).status_code == 200  # its cookie is not a guess


async def test_a_right_token_is_not_counted_as_a_failed_attempt(conn: Conn) -> None:
    app = guarded_app(conn)
    async with from_address(app, "127.0.0.6") as instructor:
        codes = await at_once([instructor.post("/sign-in", json={"token": TOKEN}) for _ in range(LIMIT + 5)], width=5)
        assert codes == [200] * (LIMIT + 5)


async def test_no_window_of_a_minute_compares_more_than_the_limit_even_across_a_clock_minutes_end(conn: Conn) -> None:
    budgets = [("v:straddler", 3)]
    end = (int(time.time()) // 60 + 1) * 60_000  # the end of this clock minute, ms
    for at in (end - 300, end - 200, end - 100):
        assert (await attempts.take(conn, "sign-in", budgets, now_ms=at))[1] is None
    # a new clock minute, still within a minute of those three: refused (a per-minute count allowed 3 more)
    assert (await attempts.take(conn, "sign-in", budgets, now_ms=end + 100))[1] == 0
    # a minute after the first of them, one place is free again, and only one
    assert (await attempts.take(conn, "sign-in", budgets, now_ms=end - 300 + 60_001))[1] is None
    assert (await attempts.take(conn, "sign-in", budgets, now_ms=end - 300 + 60_002))[1] == 0


async def test_a_flood_past_the_limit_is_not_counted_so_its_key_stays_the_limits_size(conn: Conn) -> None:
    budgets = [("v:flooder", 5), ("a:127.0.0.40", 500)]
    gate = asyncio.Semaphore(20)  # the test's connection pool, not the site's

    async def one() -> tuple[attempts.Counted, int | None]:
        async with gate:
            return await attempts.take(conn, "join", budgets)

    replies = await asyncio.gather(*(one() for _ in range(200)))
    assert [past for _, past in replies].count(None) == 5
    assert await conn.zcard(attempts.attempts_key("join", "v:flooder")) == 5
    assert await conn.zcard(attempts.attempts_key("join", "a:127.0.0.40")) == 5  # a refused visitor spends no more


async def test_a_right_attempt_given_back_frees_its_place_at_once(conn: Conn) -> None:
    budgets = [("v:right", 1)]
    counted, past = await attempts.take(conn, "sign-in", budgets)
    assert past is None and (await attempts.take(conn, "sign-in", budgets))[1] == 0
    await attempts.give_back(conn, counted)
    assert (await attempts.take(conn, "sign-in", budgets))[1] is None


async def test_an_attempt_the_address_refuses_spends_none_of_the_visitors_count(conn: Conn) -> None:
    address = ("a:127.0.0.41", 2)
    for n in range(2):
        assert (await attempts.take(conn, "sign-in", [(f"v:first-{n}", 5), address]))[1] is None
    # the address is full: a fresh visitor's attempt is refused there, so it is compared nowhere
    counted, past = await attempts.take(conn, "sign-in", [("v:fresh", 5), address])
    assert (counted, past) == ([], 1)
    assert not await conn.exists(attempts.attempts_key("sign-in", "v:fresh"))

