"""Who may use the instructor's pages and endpoints: 403 with the feature off or
for a learner, 401 for a stranger, the failed-attempt limit consulted before
the token is compared (an instructor already signed in stays signed in), a
foreign Origin refused — on the real site under uvicorn and a real Valkey."""

from __future__ import annotations

import httpx

from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import class_site, joined, open_class
from tests.support import INSTRUCTOR_TOKEN, LiveSite, dumped

BEARER = {"Authorization": f"Bearer {INSTRUCTOR_TOKEN}"}
GETS = ["/instructor/overview", "/instructor/watching", "/instructor/rooms/{code}/roster.json",
        "/instructor/rooms/{code}/answers.json", "/instructor/rooms/{code}/results.csv",
        "/instructor/rooms/{code}/events", "/instructor/rooms/{code}/projector"]
POSTS = [("/instructor/reset", {"all": True}), ("/instructor/rooms", {"name": "x"}),
         ("/instructor/rooms/{code}/mode", {"mode": "demo"}), ("/instructor/rooms/{code}/demo", {"demo": True}),
         ("/instructor/rooms/{code}/bring", {"page": "/flows/cross-queue"}),
         ("/instructor/rooms/{code}/reset-learners", {"confirm": True}),
         ("/instructor/rooms/{code}/ask", {"pick": "fanin|deps-after-complete|0"}),
         ("/instructor/rooms/{code}/reveal", {}), ("/instructor/rooms/{code}/second-round", {}),
         ("/instructor/rooms/{code}/ask/end", {}), ("/instructor/rooms/{code}/press", {}),
         ("/instructor/rooms/{code}/join", {}), ("/instructor/rooms/{code}/close", {}),
         ("/instructor/watch/stop", {})]


def everything(site: LiveSite) -> dict[str, object]:
    """Every key and its value: what "nothing written" compares."""
    r = site.redis()
    return dumped(r, skip=("lab:attempts:",))


def test_the_instructor_page_answers_401_with_a_sign_in_form_and_no_inline_script(clean: LiveSite) -> None:
    answer = clean.visitor().get("/instructor")
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")
    assert 'action="/instructor/sign-in"' in answer.text and 'name="token"' in answer.text
    assert "<script>" not in answer.text


def test_every_instructor_endpoint_answers_401_to_a_stranger_and_writes_nothing(clean: LiveSite) -> None:
    _, code = open_class(clean)
    stranger = clean.visitor()
    before = everything(clean)
    for path in GETS:
        answer = stranger.get(path.format(code=code), headers={"Accept": "application/json"})
        assert answer.status_code == 401, path
        assert "sign in" in answer.json()["error"]
    for path, body in POSTS:
        answer = stranger.post(path.format(code=code), json=body)
        assert answer.status_code == 401, path
    assert everything(clean) == before


def test_a_learner_of_the_class_gets_403_from_every_instructor_endpoint_and_nothing_is_written(
    clean: LiveSite,
) -> None:
    _, code = open_class(clean)
    learner = joined(clean, code, "Ada")
    assert learner.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    before = everything(clean)
    for path in GETS:
        answer = learner.get(path.format(code=code), headers={"Accept": "application/json"})
        assert answer.status_code == 403, path
        assert "instructor's" in answer.json()["error"]
    for path, body in POSTS:
        assert learner.post(path.format(code=code), json=body).status_code == 403, path
    wrong = {"Authorization": "Bearer not-the-instructor-token"}  # a guess is a guess: 401, counted
    assert learner.get(f"/instructor/rooms/{code}/answers.json", headers=wrong).status_code == 401
    assert everything(clean) == before


def test_the_bearer_token_opens_the_json_endpoints_and_a_wrong_one_answers_401(clean: LiveSite) -> None:
    _, code = open_class(clean)
    client = clean.client()
    for path in ("/instructor/overview", f"/instructor/rooms/{code}/roster.json",
                 f"/instructor/rooms/{code}/answers.json", f"/instructor/rooms/{code}/results.csv"):
        assert client.get(path, headers=BEARER).status_code == 200, path
        assert client.get(path, headers={"Authorization": "Bearer wrong-token-of-length"}).status_code == 401
    assert client.get("/instructor", headers=BEARER).status_code == 200


def test_a_wrong_token_sets_no_cookie_and_a_forged_cookie_is_refused(clean: LiveSite) -> None:
    client = clean.visitor()
    answer = client.post("/instructor/sign-in", data={"token": INSTRUCTOR_TOKEN + "x"})
    assert answer.status_code == 401 and "not the instructor token" in answer.text
    assert "emqlab_instructor" not in answer.headers.get("set-cookie", "")
    client.cookies.set("emqlab_instructor", "eyJhIjoxfQ.forged.signature")
    assert client.get("/instructor").status_code == 401
    assert client.post("/instructor/reset", json={"all": True}).status_code == 401


def test_sign_in_and_changes_from_a_foreign_origin_are_refused_with_403(clean: LiveSite) -> None:
    evil = {"Origin": "https://evil.example"}
    client = clean.visitor()
    assert client.post("/instructor/sign-in", data={"token": INSTRUCTOR_TOKEN}, headers=evil).status_code == 403
    assert client.get("/instructor").status_code == 401
    instructor, code = open_class(clean)
    before = everything(clean)
    refused = instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"}, headers=evil)
    assert refused.status_code == 403 and "cross-site" in refused.json()["error"]
    assert instructor.post("/room/join", json={"code": code, "name": "Eve"}, headers=evil).status_code == 403
    assert everything(clean) == before


def test_past_the_limit_the_token_is_not_compared_yet_a_signed_in_instructor_and_other_addresses_go_on(
    valkey_server: ValkeyProcess,
) -> None:
    env = {"EMQLAB_ATTEMPT_LIMIT": "3", "EMQLAB_TRUST_FORWARDED_FOR": "1"}
    with class_site(valkey_server.url, env) as site:
        signed_in = site.instructor()  # before any failure: stays signed in whatever the limit says
        here, there = {"X-Forwarded-For": "203.0.113.7"}, {"X-Forwarded-For": "198.51.100.9"}
        guesser = site.visitor()
        for i in range(3):
            assert guesser.post("/instructor/sign-in", json={"token": f"guess-{i}-abcdefgh"},
                                headers=here).status_code == 401
        for attempt in ({"json": {"token": INSTRUCTOR_TOKEN}}, {"data": {"token": INSTRUCTOR_TOKEN}}):
            blocked = guesser.post("/instructor/sign-in", headers=here, **attempt)  # type: ignore[arg-type]
            assert blocked.status_code == 429 and "too many failed attempts" in blocked.text
        assert guesser.get("/instructor/overview", headers={**BEARER, **here}).status_code == 429
        other = site.visitor()
        assert other.post("/instructor/sign-in", json={"token": INSTRUCTOR_TOKEN}, headers=there).status_code == 200
        assert signed_in.get("/instructor/overview", headers=here).status_code == 200
        again = signed_in.post("/instructor/sign-in", json={"token": "anything at all"}, headers=here)
        assert again.status_code == 200  # signed in already: nothing compared, nothing counted
        for code in ("ABC234", "ABC235", "ABC236"):
            assert guesser.post("/room/join", json={"code": code, "name": "Ada"}, headers=here).status_code == 404
        assert guesser.post("/room/join", json={"code": "ABC237", "name": "Ada"}, headers=here).status_code == 429


def test_with_no_token_configured_every_instructor_surface_answers_403(valkey_server: ValkeyProcess) -> None:
    with class_site(valkey_server.url, without=("EMQLAB_INSTRUCTOR_TOKEN",)) as site:
        client = site.visitor()
        page = client.get("/instructor")
        assert page.status_code == 403 and "EMQLAB_INSTRUCTOR_TOKEN" in page.text
        assert client.post("/instructor/sign-in", json={"token": INSTRUCTOR_TOKEN}).status_code == 403
        for path in GETS:
            assert client.get(path.format(code="ABC234"), headers=BEARER).status_code == 403, path
        for path, body in POSTS:
            assert client.post(path.format(code="ABC234"), json=body).status_code == 403, path


def test_an_ephemeral_site_says_on_the_instructor_page_that_its_data_will_not_survive_a_restart(
    valkey_server: ValkeyProcess,
) -> None:
    with class_site(valkey_server.url, {"EMQLAB_EPHEMERAL": "1"}) as site:
        page = site.instructor().get("/instructor")
        assert page.status_code == 200
        assert "will not survive a restart" in page.text
        refused = site.client().post("/instructor/sign-in", data={"token": "a wrong token, long enough"},
                                     headers={"Origin": site.url})
        assert refused.status_code == 401
        assert "will not survive a restart" in refused.text and ">True<" not in refused.text
    with class_site(valkey_server.url) as site:
        assert "will not survive a restart" not in site.instructor().get("/instructor").text


def test_ill_formed_bodies_and_codes_answer_400_and_unknown_ones_404_in_words(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    before = everything(clean)
    for path, body in [("/instructor/reset", {}), ("/instructor/reset", {"sandbox": "s123"}),
                       ("/instructor/reset", {"sandbox": ["s0123456789"]}), ("/instructor/reset", {"all": "maybe"}),
                       ("/instructor/reset", {"room": "no{pe}"}), ("/instructor/reset", {"sandbox": "s0123456789",
                                                                                       "all": True}),
                       (f"/instructor/rooms/{code}/mode", {"mode": "party"}),
                       (f"/instructor/rooms/{code}/demo", {}),
                       (f"/instructor/rooms/{code}/bring", {"page": "https://evil.example/"}),
                       (f"/instructor/rooms/{code}/reset-learners", {}),
                       (f"/instructor/rooms/{code}/ask", {"pick": "fanin|deps-after-complete|3"}),
                       (f"/instructor/rooms/{code}/mode", {"mode": "own", "extra": 1})]:
        answer = instructor.post(path, json=body)
        assert answer.status_code == 400, (path, body, answer.text)
        assert answer.json()["error"]
    assert instructor.post("/instructor/reset", json={"sandbox": "s0000000000"}).status_code == 404
    assert instructor.post("/instructor/reset", json={"room": "ABC234"}).status_code == 404
    assert instructor.get("/instructor/rooms/nope!/roster.json").status_code == 400
    for path in ("/instructor/rooms/ABC234/roster.json", "/instructor/rooms/ABC234/answers.json",
                 "/instructor/rooms/ABC234/results.csv", "/instructor/rooms/ABC234"):
        assert instructor.get(path, headers={"Accept": "application/json"}).status_code == 404, path
    assert instructor.post(f"/instructor/rooms/{code}/reveal", json={}).status_code == 409
    assert instructor.post(f"/instructor/rooms/{code}/press", json={}).status_code == 409
    assert instructor.post("/instructor/reset", content=b"token=1", headers={"Content-Type": "text/plain"}
                           ).status_code == 415
    assert everything(clean) == before


def test_a_form_without_javascript_gets_a_303_back_with_a_notice_and_a_refusal_gets_the_page_with_the_sentence(
    clean: LiveSite,
) -> None:
    instructor = clean.instructor()
    opened = instructor.post("/instructor/rooms", data={"name": "Form class"})
    assert opened.status_code == 303 and opened.headers["location"].startswith("/instructor/rooms/")
    page = instructor.get(opened.headers["location"])
    assert page.status_code == 200 and "is open: learners join at /room" in page.text
    refused = instructor.post(opened.headers["location"] + "/mode", data={"mode": "party"})
    assert refused.status_code == 400
    assert "&#39;mode&#39; must be one of" in refused.text or "'mode' must be one of" in refused.text
    assert isinstance(refused, httpx.Response) and "text/html" in refused.headers["content-type"]
