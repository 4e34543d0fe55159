"""server/web/guards.py without a server, on real Starlette requests: who asks
(signed cookies only), the instructor's token and cookie, the origin check,
and the budgets a request spends (counted in this process). A class's mode
and the failed-attempt limit live in Valkey (tests/integration)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette

from server.sandboxes.sandbox import COOKIE, SandboxCookie, SignedCookie
from server.settings import Settings
from server.web import guards, sessions
from tests import services_stub
from tests.unit.web.asgi import app_with, request

SECRET = "unit-test-secret"
TOKEN = "the-instructor-token"
SANDBOX, OTHER = "s0123456789", "sabcdefghij"


def site(settings: Settings | None = None, **state: Any) -> Starlette:
    return app_with(
        settings or Settings(instructor_token=TOKEN, rate_limit=0, read_limit=0),
        cookies=services_stub.cookies(
            sandbox=SandboxCookie(SECRET),
            instructor=SignedCookie(guards.INSTRUCTOR_COOKIE, SECRET, "emqlab-instructor", 3600),
            room=SignedCookie("emqlab_room", SECRET, "emqlab-room", 3600),
            watch=SignedCookie("emqlab_watch", SECRET, "emqlab-watch", 3600)),
        windows=guards.Windows(),
        **state,
    )


def cookie_of(app: Starlette, sandbox: str = SANDBOX) -> dict[str, str]:
    return {"cookie": f"{COOKIE}={app.state.services.cookies.sandbox.serializer.dumps(sandbox)}"}


def refused(call: Any, *args: Any) -> guards.Refused:
    with pytest.raises(guards.Refused) as caught:
        call(*args)
    return caught.value


async def refused_async(call: Any, *args: Any, **kwargs: Any) -> guards.Refused:
    with pytest.raises(guards.Refused) as caught:
        await call(*args, **kwargs)
    return caught.value


# -- who asks --------------------------------------------------------------------------


def test_the_visitor_is_the_sandbox_the_signed_cookie_names() -> None:
    app = site()
    assert guards.visitor_of(request(cookie_of(app), app=app)) == SANDBOX


def test_a_page_visit_without_a_cookie_uses_the_sandbox_the_middleware_just_named() -> None:
    assert guards.visitor_of(request(app=site(), state={"sandbox": OTHER})) == OTHER


def test_no_cookie_or_a_forged_one_is_refused_with_403() -> None:
    missing = refused(guards.visitor_of, request(app=site()))
    assert missing.status == 403 and "open a page of the course first" in str(missing)
    forged = SandboxCookie("another-secret").serializer.dumps(SANDBOX)
    wrong = refused(guards.visitor_of, request({"cookie": f"{COOKIE}={forged}"}, app=site()))
    assert wrong.status == 403 and "not one this site signed" in str(wrong)


# -- the instructor ---------------------------------------------------------------------


@pytest.mark.parametrize(("given", "matches"),
                         [(TOKEN, True), (TOKEN + " ", False), ("", False), (None, False), (42, False)])
def test_only_the_exact_token_as_text_matches(given: object, matches: bool) -> None:
    assert guards.token_matches(given, TOKEN) is matches


@pytest.mark.parametrize(("header", "bearer"),
                         [(f"Bearer {TOKEN}", TOKEN), (f"bearer   {TOKEN} ", TOKEN), ("Basic abc", None), ("", None)])
def test_the_bearer_token_is_read_from_the_authorization_header(header: str, bearer: str | None) -> None:
    assert guards.bearer_of(request({"authorization": header} if header else {})) == bearer


def test_the_instructor_is_known_by_the_bearer_token_or_a_live_session_never_by_a_cookie_alone() -> None:
    app = site()
    signed = app.state.services.cookies.instructor.serializer.dumps("a-session-id-valkey-does-not-hold")
    assert guards.is_instructor(request({"authorization": f"Bearer {TOKEN}"}, app=app))
    # the session middleware (server/web/guards.py) found the cookie's session live in Valkey
    assert guards.is_instructor(request(app=app, state={sessions.SESSION_STATE: "a-live-session"}))
    assert not guards.is_instructor(request({"cookie": f"{guards.INSTRUCTOR_COOKIE}={signed}"}, app=app))
    assert not guards.is_instructor(request({"authorization": "Bearer not-the-token!!"}, app=app))
    assert not guards.is_instructor(request(app=app))


def test_with_no_token_set_nobody_is_the_instructor() -> None:
    app = site(Settings())
    assert not guards.is_instructor(request({"authorization": "Bearer anything-at-all"}, app=app))


async def test_require_instructor_says_why_each_caller_is_refused_before_any_token_is_compared() -> None:
    off = await refused_async(guards.require_instructor, request(app=site(Settings())))
    assert (off.status, str(off)) == (403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN")
    foreign = await refused_async(guards.require_instructor,
                                  request({"origin": "https://evil.example"}, app=site()))
    assert foreign.status == 403
    nobody = await refused_async(guards.require_instructor, request(app=site()))
    assert nobody.status == 401 and str(nobody).startswith("sign in as the instructor first")
    await guards.require_instructor(request(app=site(), state={sessions.SESSION_STATE: "a-live-session"}))


# -- cross-site requests -------------------------------------------------------------


def test_a_request_without_an_origin_passes_unless_the_browser_says_cross_site() -> None:
    guards.check_origin(request())
    guards.check_origin(request({"sec-fetch-site": "same-origin"}))
    assert refused(guards.check_origin, request({"sec-fetch-site": "cross-site"})).status == 403


@pytest.mark.parametrize("origin", ["http://lab.example", "HTTP://LAB.EXAMPLE"])
def test_the_sites_own_origin_passes(origin: str) -> None:
    guards.check_origin(request({"origin": origin}))


@pytest.mark.parametrize("origin", ["https://lab.example", "http://lab.example:8080", "http://evil.example",
                                    "null", "http://lab.example.evil.example"])
def test_another_scheme_port_or_host_is_refused_naming_the_origin(origin: str) -> None:
    refusal = refused(guards.check_origin, request({"origin": origin}))
    assert refusal.status == 403 and f"Origin {origin} is not this site" in str(refusal)


def test_an_unreadable_origin_is_not_echoed_back() -> None:
    assert "(unreadable)" in str(refused(guards.check_origin, request({"origin": "http://x" * 30})))


def test_behind_a_proxy_the_public_origin_is_the_one_that_passes() -> None:
    app = site(Settings(public_origin="https://flows.example.org/"))
    guards.check_origin(request({"origin": "https://flows.example.org"}, app=app))
    assert refused(guards.check_origin, request({"origin": "http://lab.example"}, app=app)).status == 403


# -- what a request spends ------------------------------------------------------------


async def spend(app: Starlette, times: int, *, client: str = "127.0.0.1", sandbox: str = SANDBOX,
                write: bool = True, counts: str = "actions") -> list[int]:
    """The status of `times` entries: 200 let in, else the refusal's."""
    statuses = []
    for _ in range(times):
        try:
            await guards.enter(request(cookie_of(app, sandbox), app=app, client=client), write=write, counts=counts)
            statuses.append(200)
        except guards.Refused as exc:
            statuses.append(exc.status)
    return statuses


async def test_actions_are_counted_per_visitor_and_the_refusal_says_the_budget() -> None:
    app = site(Settings(rate_limit=3))
    assert await spend(app, 5) == [200, 200, 200, 429, 429]
    assert await spend(app, 1, sandbox=OTHER) == [200]  # another visitor has a budget of their own
    with pytest.raises(guards.Refused, match="at most 3 every 10 seconds per visitor"):
        await guards.enter(request(cookie_of(app), app=app), write=True)


async def test_actions_are_counted_per_address_whatever_the_cookie() -> None:
    app = site(Settings(rate_limit=100, address_rate_limit=4))
    visitors = [f"s00000000{n:02d}" for n in range(6)]
    statuses = [(await spend(app, 1, sandbox=v))[0] for v in visitors]
    assert statuses == [200] * 4 + [429] * 2
    assert await spend(app, 1, sandbox=visitors[0], client="127.0.0.2") == [200]  # another address


async def test_reads_have_a_budget_of_their_own_and_spend_no_action() -> None:
    app = site(Settings(rate_limit=2, read_limit=3))
    assert await spend(app, 4, write=False, counts="reads") == [200, 200, 200, 429]
    assert await spend(app, 2) == [200, 200]  # the reads spent nothing of the actions
    with pytest.raises(guards.Refused, match="too many reads"):
        await guards.enter(request(cookie_of(app), app=app), write=False, counts="reads")


async def test_a_write_from_a_foreign_origin_is_refused_before_it_spends_anything() -> None:
    app = site(Settings(rate_limit=1))
    with pytest.raises(guards.Refused, match="cross-site"):
        await guards.enter(request({**cookie_of(app), "origin": "https://evil.example"}, app=app), write=True)
    assert await spend(app, 1) == [200]


@pytest.mark.parametrize(("trust", "forwarded", "address"), [
    (False, "203.0.113.9", "127.0.0.1"),
    (True, "198.51.100.1, 203.0.113.9", "203.0.113.9"),
    (True, "", "127.0.0.1"),
    (True, "bad{key}*", "badkey"),
])
def test_the_client_address_takes_the_proxys_last_entry_only_when_told_to(
    trust: bool, forwarded: str, address: str
) -> None:
    app = site(Settings(trust_forwarded_for=trust))
    assert guards.client_address(request({"x-forwarded-for": forwarded}, app=app)) == address


def test_a_budget_of_zero_is_no_limit_and_old_windows_are_forgotten() -> None:
    windows = guards.Windows()
    for _ in range(1000):
        windows.spend("a:x", 0, "per visitor")
    assert not windows.counts
    for n in range(guards.REMEMBERED + 10):
        windows.spend(f"a:{n}", 5, "per visitor")
    assert len(windows.counts) == guards.REMEMBERED
