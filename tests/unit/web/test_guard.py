"""server/web/guard.py's pure parts, on real Starlette requests without a
server: who is asking (signed cookies only), the instructor's token, the
origin check, the read-only refusals, the page a request came from and the
activity writes it queues. Admission and rates run on Valkey
(tests/integration)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis.asyncio as aioredis

from server.content import Course
from server.sandboxes.sandbox import COOKIE, NoSandbox, SandboxCookie, SignedCookie
from server.settings import Settings
from server.web import guard
from server.web.errors import Refused
from tests.unit.web.asgi import app_with, request

SECRET = "unit-test-secret"
TOKEN = "the-instructor-token"
SANDBOX, OTHER = "s0123456789", "sabcdefghij"
SETTINGS = Settings(instructor_token=TOKEN)


def site(settings: Settings = SETTINGS, **state: object):
    return app_with(
        settings,
        cookie=SandboxCookie(SECRET),
        instructor_cookie=SignedCookie(guard.INSTRUCTOR_COOKIE, SECRET, "emqlab-instructor", 3600),
        **state,
    )


def with_cookie(name: str, value: str) -> dict[str, str]:
    return {"cookie": f"{name}={value}"}


def refused(call, *args) -> Refused:
    with pytest.raises(Refused) as caught:
        call(*args)
    return caught.value


# -- who is asking -----------------------------------------------------------------


def test_the_sandbox_is_the_one_the_signed_cookie_names() -> None:
    app = site()
    signed = app.state.cookie.serializer.dumps(SANDBOX)
    assert guard.sandbox_of(request(with_cookie(COOKIE, signed), app=app)) == SANDBOX
    assert guard.visitor_of(request(with_cookie(COOKIE, signed), app=app)) == SANDBOX


def test_a_room_acting_elsewhere_names_its_sandbox_and_the_visitor_stays_who_they_are() -> None:
    req = request(app=site(), state={"sandbox": OTHER, "visitor": SANDBOX, "room": "ABC234"})
    assert (guard.sandbox_of(req), guard.visitor_of(req), guard.room_of(req)) == (OTHER, SANDBOX, "ABC234")


def test_no_cookie_or_a_forged_one_is_no_sandbox() -> None:
    with pytest.raises(NoSandbox, match="no sandbox cookie"):
        guard.sandbox_of(request(app=site()))
    forged = SandboxCookie("another-secret").serializer.dumps(SANDBOX)
    with pytest.raises(NoSandbox, match="not one this site signed"):
        guard.sandbox_of(request(with_cookie(COOKIE, forged), app=site()))


def test_a_forged_class_cookie_is_refused_with_403_and_a_sandbox_error_with_503() -> None:
    assert refused(guard.sandbox_of, request(app=site(), state={"room_forged": True})).status == 403
    down = refused(guard.sandbox_of, request(app=site(), state={"sandbox_error": "Valkey is unreachable"}))
    assert (down.status, str(down)) == (503, "Valkey is unreachable")


# -- the instructor ----------------------------------------------------------------


def test_the_instructor_cookie_carries_a_fingerprint_that_changes_with_the_token() -> None:
    mark = guard.token_fingerprint(TOKEN)
    assert len(mark) == 32 and int(mark, 16) >= 0
    assert mark == guard.token_fingerprint(TOKEN) != guard.token_fingerprint(TOKEN + "x")
    assert TOKEN not in mark


@pytest.mark.parametrize(
    ("given", "matches"), [(TOKEN, True), (TOKEN + " ", False), ("", False), (None, False), (42, False)]
)
def test_only_the_exact_token_as_text_matches(given: object, matches: bool) -> None:
    assert guard.token_matches(given, TOKEN) is matches


@pytest.mark.parametrize(
    ("header", "bearer"),
    [(f"Bearer {TOKEN}", TOKEN), (f"bearer   {TOKEN} ", TOKEN), ("Basic abc", None), ("", None)],
)
def test_the_bearer_token_is_read_from_the_authorization_header(header: str, bearer: str | None) -> None:
    assert guard.bearer_of(request({"authorization": header} if header else {})) == bearer


def test_the_instructor_is_known_by_the_bearer_token_or_the_signed_fingerprint_cookie() -> None:
    app = site()
    cookie = app.state.instructor_cookie.serializer.dumps(guard.token_fingerprint(TOKEN))
    stale = app.state.instructor_cookie.serializer.dumps(guard.token_fingerprint("an older token"))
    assert guard.is_instructor(request({"authorization": f"Bearer {TOKEN}"}, app=app))
    assert guard.is_instructor(request(with_cookie(guard.INSTRUCTOR_COOKIE, cookie), app=app))
    assert not guard.is_instructor(request(with_cookie(guard.INSTRUCTOR_COOKIE, stale), app=app))
    assert not guard.is_instructor(request(app=app))


def test_with_no_token_set_nobody_is_the_instructor_and_the_pages_are_off() -> None:
    app = site(Settings())
    assert not guard.is_instructor(request({"authorization": "Bearer anything"}, app=app))


async def test_require_instructor_says_why_each_caller_is_refused() -> None:
    async def status(app, headers=None, state=None) -> tuple[int, str]:
        with pytest.raises(Refused) as caught:
            await guard.require_instructor(request(headers, app=app, state=state))
        return caught.value.status, str(caught.value)

    assert await status(site(Settings())) == (
        403, "instructor features are off: the site runs without EMQLAB_INSTRUCTOR_TOKEN",
    )
    assert (await status(site(), {"origin": "https://evil.example"}))[0] == 403
    assert await status(site(), state={"room": "ABC234"}) == (
        403, "this is the instructor's: a learner in a class cannot use it",
    )
    code, sentence = await status(site())
    assert code == 401 and sentence.startswith("sign in as the instructor first")
    await guard.require_instructor(request({"authorization": f"Bearer {TOKEN}"}, app=site()))


# -- cross-site requests -------------------------------------------------------------


def test_a_request_without_an_origin_passes_unless_the_browser_says_cross_site() -> None:
    guard.check_origin(request())
    guard.check_origin(request({"sec-fetch-site": "same-origin"}))
    assert refused(guard.check_origin, request({"sec-fetch-site": "cross-site"})).status == 403


@pytest.mark.parametrize("origin", ["http://lab.example", "HTTP://LAB.EXAMPLE"])
def test_the_sites_own_origin_passes(origin: str) -> None:
    guard.check_origin(request({"origin": origin}))


@pytest.mark.parametrize("origin", ["https://lab.example", "http://lab.example:8080", "http://evil.example", "null"])
def test_another_scheme_port_or_host_is_refused_naming_the_origin(origin: str) -> None:
    refusal = refused(guard.check_origin, request({"origin": origin}))
    assert refusal.status == 403 and f"Origin {origin} is not this site" in str(refusal)


def test_an_unreadable_origin_is_not_echoed_back() -> None:
    refusal = refused(guard.check_origin, request({"origin": "http://x" * 30}))
    assert "(unreadable)" in str(refusal)


def test_behind_a_proxy_the_public_origin_is_the_one_that_passes() -> None:
    app = site(replace(SETTINGS, public_origin="https://flows.example.org"))
    guard.check_origin(request({"origin": "https://flows.example.org"}, app=app))
    assert refused(guard.check_origin, request({"origin": "http://lab.example"}, app=app)).status == 403


# -- read-only pages ------------------------------------------------------------------


def test_a_page_watching_a_learner_or_a_demo_cannot_act() -> None:
    watching = refused(guard.check_demo, request(app=site(), state={"watching": OTHER}))
    assert (watching.status, str(watching)) == (403, guard.WATCH_REFUSAL)
    demo = refused(guard.check_demo, request(app=site(), state={"demo": True}))
    assert (demo.status, str(demo)) == (403, guard.DEMO_REFUSAL)
    guard.check_demo(request({"authorization": f"Bearer {TOKEN}"}, app=site(), state={"demo": True}))
    guard.check_demo(request(app=site()))


# -- where a request came from, and what it records ------------------------------------


@pytest.fixture(scope="module")
def course() -> Course:
    return Course.load()


@pytest.mark.parametrize(
    ("referer", "page"),
    [
        ("http://lab.example/flows/parent-and-children", "/flows/parent-and-children"),
        ("http://lab.example/flows/parent-and-children/#the-fan-in", "/flows/parent-and-children"),
        ("http://lab.example/instructor", None),
        ("http://elsewhere.example/flows/parent-and-children", None),
        ("", None),
    ],
)
def test_the_page_of_a_request_is_a_course_page_of_this_site_named_by_its_referer(
    course: Course, referer: str, page: str | None
) -> None:
    req = request({"referer": referer} if referer else {}, app=site(course=course))
    assert guard.page_of(req) == page


def queued(pipe: aioredis.client.Pipeline) -> list[tuple]:
    return [tuple(args) for args, _options in pipe.command_stack]


def test_an_action_queues_the_activity_of_the_acting_sandbox_and_of_the_learner_and_their_room() -> None:
    settings = replace(SETTINGS, sandbox_ttl=100, room_ttl=500)
    req = request(app=site(settings), state={"visitor": SANDBOX, "room": "ABC234"})
    pipe = aioredis.Redis().pipeline(transaction=False)  # never executed: only what it would send
    guard.queue_activity(req, pipe, OTHER, "fanin")
    sent = queued(pipe)
    names = [(c[0], c[1]) for c in sent]
    assert names == [
        ("HSET", f"lab:{{{OTHER}}}:meta"), ("EXPIRE", f"lab:{{{OTHER}}}:meta"),
        ("HSET", f"lab:{{{SANDBOX}}}:meta"), ("EXPIRE", f"lab:{{{SANDBOX}}}:meta"),
        ("EXPIRE", "lab:room:ABC234"), ("EXPIRE", "lab:room:ABC234:learners"),
    ]
    assert sent[0][2:4] == ("widget", "fanin")
    assert [c[2] for c in sent if c[0] == "EXPIRE"] == [200, 200, 500, 500]


def test_the_instructor_watching_a_learner_records_no_activity_for_them() -> None:
    pipe = aioredis.Redis().pipeline(transaction=False)
    guard.queue_activity(request(app=site(), state={"watching": SANDBOX}), pipe, SANDBOX, "fanin")
    assert queued(pipe) == []


@pytest.mark.parametrize(
    ("trust", "forwarded", "address"),
    [(False, "203.0.113.9", "127.0.0.1"), (True, "198.51.100.1, 203.0.113.9", "203.0.113.9"),
     (True, "", "127.0.0.1"), (True, "bad{key}*", "badkey")],
)
def test_the_client_address_takes_the_proxys_last_entry_only_when_told_to(
    trust: bool, forwarded: str, address: str
) -> None:
    app = site(replace(SETTINGS, trust_forwarded_for=trust))
    assert guard.client_address(request({"x-forwarded-for": forwarded}, app=app)) == address
