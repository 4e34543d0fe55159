"""The instructor: 401/403 without the token, sign-in, resets of one sandbox, a
room or all (site and `emqlab reset`), and rooms with demo mode — against the
real site under uvicorn on a real valkey-server."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from server import cli
from server.live.heartbeat import is_beat_key
from server.sandboxes.lifecycle import sandbox_of_key
from server.valkey.process import ValkeyProcess
from tests.support import DIVE, INSTRUCTOR_TOKEN, Events, LiveSite, running, sandbox_of

WIDGETS = ("enqueue-stepper", "fanin")


def keys_by_sandbox(site: LiveSite) -> dict[str | None, set[str]]:
    found: dict[str | None, set[str]] = {}
    for key in site.redis().scan_iter("*"):
        if not is_beat_key(key):  # the hub's heartbeat comes back within a second of any delete
            found.setdefault(sandbox_of_key(key), set()).add(key)
    return found


def learner(site: LiveSite) -> tuple[httpx.Client, str]:
    client = site.visitor()
    for name in WIDGETS:
        assert client.get(f"/api/widgets/{name}/state", headers={"Referer": site.url + DIVE}).status_code == 200
    return client, sandbox_of(client)


def dependencies(client: httpx.Client) -> int:
    snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
    return snap["picture"]["parent"]["dependencies"]


INSTRUCTOR_POSTS = [
    ("/instructor/reset", {"all": True}),
    ("/instructor/rooms", {"name": "x"}),
    ("/instructor/rooms/ABC234/demo", {"demo": True}),
    ("/instructor/rooms/ABC234/join", {}),
    ("/instructor/rooms/ABC234/close", {}),
]


# -- without the token ---------------------------------------------------------------


def test_the_instructor_page_answers_401_with_a_sign_in_form_until_the_token_is_given(clean: LiveSite) -> None:
    answer = clean.visitor().get("/instructor")
    assert answer.status_code == 401
    assert 'action="/instructor/sign-in"' in answer.text
    assert 'name="token"' in answer.text
    assert "<script>" not in answer.text  # CSP: no inline script


@pytest.mark.parametrize(("path", "body"), INSTRUCTOR_POSTS)
def test_every_instructor_endpoint_answers_401_without_the_instructor_cookie(
    clean: LiveSite, path: str, body: dict[str, object]
) -> None:
    _, sandbox = learner(clean)
    before = keys_by_sandbox(clean)
    answer = clean.visitor().post(path, json=body)
    assert answer.status_code == 401
    assert "sign in" in answer.json()["error"]
    assert keys_by_sandbox(clean)[sandbox] == before[sandbox]


def test_the_overview_answers_401_without_the_cookie_and_a_wrong_bearer_token(clean: LiveSite) -> None:
    client = clean.visitor()
    assert client.get("/instructor/overview").status_code == 401
    wrong = client.get("/instructor/overview", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
    right = client.get("/instructor/overview", headers={"Authorization": f"Bearer {INSTRUCTOR_TOKEN}"})
    assert right.status_code == 200


def test_a_wrong_token_is_refused_with_401_and_sets_no_instructor_cookie(clean: LiveSite) -> None:
    client = clean.visitor()
    answer = client.post("/instructor/sign-in", data={"token": INSTRUCTOR_TOKEN + "x"})
    assert answer.status_code == 401
    assert "not the instructor token" in answer.text
    assert "emqlab_instructor" not in answer.headers.get("set-cookie", "")
    assert client.get("/instructor").status_code == 401


def test_a_forged_instructor_cookie_is_not_accepted(clean: LiveSite) -> None:
    client = clean.visitor()
    client.cookies.set("emqlab_instructor", "eyJhIjoxfQ.forged.signature")
    assert client.get("/instructor").status_code == 401
    assert client.post("/instructor/reset", json={"all": True}).status_code == 401


def test_sign_in_and_instructor_changes_from_a_foreign_origin_are_refused(clean: LiveSite) -> None:
    client = clean.visitor()
    evil = {"Origin": "https://evil.example"}
    assert client.post("/instructor/sign-in", data={"token": INSTRUCTOR_TOKEN}, headers=evil).status_code == 403
    assert client.get("/instructor").status_code == 401
    instructor = clean.instructor()
    _, sandbox = learner(clean)
    before = keys_by_sandbox(clean)
    answer = instructor.post("/instructor/reset", json={"sandbox": sandbox}, headers=evil)
    assert answer.status_code == 403
    assert "cross-site" in answer.json()["error"]
    assert keys_by_sandbox(clean) == before


def test_failed_sign_ins_and_unknown_room_codes_are_limited_per_client_yet_the_right_token_signs_in(
    valkey_server: ValkeyProcess,
) -> None:
    with running(valkey_server.url, {"EMQLAB_ATTEMPT_LIMIT": "2"}) as site:
        client = site.visitor()
        assert client.post("/instructor/sign-in", json={"token": "guess-1"}).status_code == 401
        assert client.post("/instructor/sign-in", json={"token": "guess-2"}).status_code == 401
        blocked = client.post("/instructor/sign-in", json={"token": "guess-3"})
        assert blocked.status_code == 429
        assert "too many failed attempts" in blocked.json()["error"]
        assert client.post("/instructor/sign-in", json={"token": INSTRUCTOR_TOKEN}).status_code == 200
        assert client.post("/room/join", json={"code": "ABC234", "name": "Ada"}).status_code == 404
        assert client.post("/room/join", json={"code": "ABC235", "name": "Ada"}).status_code == 404
        assert client.post("/room/join", json={"code": "ABC236", "name": "Ada"}).status_code == 429


def test_instructor_pages_and_endpoints_answer_403_when_no_token_is_configured(valkey_server: ValkeyProcess) -> None:
    with running(valkey_server.url, {"EMQLAB_INSTRUCTOR_TOKEN": ""}) as site:
        client = site.visitor()
        page = client.get("/instructor")
        assert page.status_code == 403
        assert "EMQLAB_INSTRUCTOR_TOKEN" in page.text
        assert client.post("/instructor/sign-in", data={"token": ""}).status_code == 403
        assert client.post("/instructor/sign-in", json={"token": INSTRUCTOR_TOKEN}).status_code == 403
        assert client.get("/instructor/overview").status_code == 403
        for path, body in INSTRUCTOR_POSTS:
            assert client.post(path, json=body).status_code == 403, path


# -- signed in -----------------------------------------------------------------------


def test_sign_in_opens_the_page_listing_sandboxes_with_last_activity_dive_and_widget(clean: LiveSite) -> None:
    _, sandbox = learner(clean)
    instructor = clean.instructor()
    page = instructor.get("/instructor")
    assert page.status_code == 200
    assert "Signed in as the instructor." in page.text
    row = re.search(rf'<tr data-sandbox="{sandbox}">(.*?)</tr>', page.text, re.DOTALL)
    assert row is not None
    assert DIVE in row.group(1)
    assert "s ago" in row.group(1)
    assert re.search(r"<td data-label=\"Widget\">(fanin|enqueue-stepper)</td>", row.group(1))
    overview = instructor.get("/instructor/overview").json()
    mine = next(s for s in overview["sandboxes"] if s["id"] == sandbox)
    assert mine["page"] == DIVE
    assert mine["widget"] in WIDGETS
    assert time.time() - mine["last_seen"] < 60


def parked(site: LiveSite, sandbox: str) -> str | None:
    """The fan-in parent's counter as Valkey holds it (3 once landed afresh)."""
    return site.redis().get(f"emq:{{{sandbox}.fanin}}:job:JOBparent:dependencies")


def test_reset_of_one_sandbox_resets_exactly_its_widgets_and_the_scenario_lands_again(clean: LiveSite) -> None:
    one, first = learner(clean)
    _, second = learner(clean)
    one.post("/api/widgets/fanin/complete-child")
    assert dependencies(one) == 2
    before = keys_by_sandbox(clean)
    answer = clean.instructor().post("/instructor/reset", json={"sandbox": first})
    assert answer.status_code == 200
    kept = {f"lab:{{{first}}}:meta", f"lab:{{{first}}}:progress"}
    assert answer.json()["removed"] == len(before[first] - kept)
    after = keys_by_sandbox(clean)
    assert after[second] == before[second]
    assert after[None] >= {"lab:sandboxes"}
    # Reset as the widget's own Reset: landed again at once, the outcome says who.
    assert parked(clean, first) == "3"
    state = one.get("/api/widgets/fanin/state").json()["snapshot"]
    assert state["picture"]["parent"]["dependencies"] == 3
    assert state["outcome"]["by"] == "instructor" and "Reset by the instructor" in state["outcome"]["text"]


def test_a_reset_form_without_javascript_redirects_back_with_a_notice(clean: LiveSite) -> None:
    _, sandbox = learner(clean)
    instructor = clean.instructor()
    answer = instructor.post("/instructor/reset", data={"sandbox": sandbox})
    assert answer.status_code == 303
    assert answer.headers["location"] == "/instructor"
    page = instructor.get("/instructor")
    assert f"Sandbox {sandbox} was reset" in page.text


@pytest.mark.parametrize("body", [
    {}, {"sandbox": "s123"}, {"sandbox": "emq:{x}*"}, {"sandbox": ["s0123456789"]},
    {"room": "no{pe}"}, {"all": "maybe"}, {"sandbox": "s0123456789", "all": True},
])
def test_an_ill_formed_reset_is_refused_with_400_and_nothing_is_removed(clean: LiveSite, body: dict) -> None:
    learner(clean)
    before = keys_by_sandbox(clean)
    answer = clean.instructor().post("/instructor/reset", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]
    assert keys_by_sandbox(clean) == before


def test_a_reset_of_an_unknown_sandbox_or_room_answers_404(clean: LiveSite) -> None:
    instructor = clean.instructor()
    assert instructor.post("/instructor/reset", json={"sandbox": "s0000000000"}).status_code == 404
    assert instructor.post("/instructor/reset", json={"room": "ABC234"}).status_code == 404


def test_reset_all_resets_every_sandbox_and_touches_nothing_else(clean: LiveSite) -> None:
    one, first = learner(clean)
    two, second = learner(clean)
    one.post("/api/widgets/fanin/complete-child")
    two.post("/api/widgets/fanin/complete-child")
    r = clean.redis()
    r.set("someone-else:key", "kept")
    answer = clean.instructor().post("/instructor/reset", json={"all": True})
    assert answer.status_code == 200
    left = keys_by_sandbox(clean)
    assert parked(clean, first) == parked(clean, second) == "3"
    assert "someone-else:key" in left[None]
    assert r.get("someone-else:key") == "kept"


# -- rooms ---------------------------------------------------------------------------


def open_room(instructor: httpx.Client, name: str = "Tuesday") -> dict:
    answer = instructor.post("/instructor/rooms", json={"name": name})
    assert answer.status_code == 201, answer.text
    return answer.json()["room"]


def join(client: httpx.Client, code: str, name: str = "Ada") -> httpx.Response:
    return client.post("/room/join", data={"code": code.lower(), "name": name})


def test_in_a_class_each_learner_acts_in_their_own_sandbox_by_default(clean: LiveSite) -> None:
    instructor = clean.instructor()
    room = open_room(instructor)
    a, b = clean.visitor(), clean.visitor()
    own_a, own_b = sandbox_of(a), sandbox_of(b)
    assert join(a, room["code"], "Ada").status_code == 303
    assert join(b, room["code"], "Grace").status_code == 303
    assert (sandbox_of(a), sandbox_of(b)) == (own_a, own_b)
    a.post("/api/widgets/fanin/complete-child")
    assert dependencies(a) == 2
    assert dependencies(b) == 3
    assert 'data-mode="own"' in b.get("/room").text


def test_in_together_mode_everyone_acts_in_the_class_sandbox(clean: LiveSite) -> None:
    instructor = clean.instructor()
    room = open_room(instructor)
    a, b = clean.visitor(), clean.visitor()
    join(a, room["code"], "Ada")
    join(b, room["code"], "Grace")
    assert instructor.post(f"/instructor/rooms/{room['code']}/mode", json={"mode": "together"}).status_code == 200
    assert sandbox_of(a) == sandbox_of(b) == room["sandbox"]
    a.post("/api/widgets/fanin/complete-child")
    assert dependencies(b) == 2
    assert 'data-mode="together"' in b.get("/room").text
    assert b.post("/room/leave").status_code == 303
    assert sandbox_of(b) != room["sandbox"]


def test_demo_mode_lets_only_the_instructor_act_and_learners_watch_the_instructor_sandbox(clean: LiveSite) -> None:
    instructor = clean.instructor()
    room = open_room(instructor)
    learner_client = clean.visitor()
    join(learner_client, room["code"])
    own = sandbox_of(learner_client)
    assert instructor.post(f"/instructor/rooms/{room['code']}/demo", json={"demo": True}).status_code == 200
    assert 'data-mode="demo"' in learner_client.get("/room").text
    assert sandbox_of(learner_client) == sandbox_of(instructor) != own
    before = keys_by_sandbox(clean)
    refused = learner_client.post("/api/widgets/fanin/complete-child")
    assert refused.status_code == 403
    assert refused.json()["error"].startswith("demo mode: only the instructor acts in this room")
    assert learner_client.post("/api/widgets/fanin/reset").status_code == 403
    assert keys_by_sandbox(clean) == before
    assert instructor.post("/api/widgets/fanin/complete-child").status_code == 200
    assert dependencies(learner_client) == 2  # the learner watches the instructor's action
    instructor.post(f"/instructor/rooms/{room['code']}/demo", json={"demo": False})
    assert sandbox_of(learner_client) == own
    assert learner_client.post("/api/widgets/fanin/complete-child").status_code == 200


def test_joining_with_an_unknown_or_ill_formed_code_is_refused(clean: LiveSite) -> None:
    client = clean.visitor()
    assert join(client, "ABC234").status_code == 404
    assert client.post("/room/join", json={"code": "ABC{*}", "name": "Ada"}).status_code == 400
    assert client.post("/room/join", json={"code": 12, "name": "Ada"}).status_code == 400
    evil = {"Origin": "http://evil.example"}
    assert client.post("/room/join", json={"code": "ABC234", "name": "Ada"}, headers=evil).status_code == 403


def test_reset_of_a_room_resets_its_shared_sandbox_and_its_learners(clean: LiveSite) -> None:
    instructor = clean.instructor()
    room = open_room(instructor)
    member = clean.visitor()
    join(member, room["code"])
    member.post("/api/widgets/fanin/complete-child")
    _, alone = learner(clean)
    before = keys_by_sandbox(clean)
    answer = instructor.post("/instructor/reset", json={"room": room["code"]})
    assert answer.status_code == 200
    after = keys_by_sandbox(clean)
    assert after[alone] == before[alone]
    assert f"lab:room:{room['code']}" in after[None]  # the room itself stays open
    assert dependencies(member) == 3


def test_a_closed_room_sends_its_members_back_to_their_own_sandboxes(clean: LiveSite) -> None:
    instructor = clean.instructor()
    room = open_room(instructor)
    member = clean.visitor()
    join(member, room["code"])
    instructor.post(f"/instructor/rooms/{room['code']}/mode", json={"mode": "together"})
    assert sandbox_of(member) == room["sandbox"]
    assert instructor.post(f"/instructor/rooms/{room['code']}/close", json={}).status_code == 200
    assert sandbox_of(member) != room["sandbox"]
    assert join(member, room["code"]).status_code == 404


# -- the stream ----------------------------------------------------------------------


def test_a_reset_reaches_an_open_stream_which_resends_the_starting_scenario(clean: LiveSite) -> None:
    client, sandbox = learner(clean)
    client.post("/api/widgets/fanin/complete-child")
    with client.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        assert response.status_code == 200
        events = Events(response)
        first = events.until("snapshot")[-1][1]
        assert first["picture"]["parent"]["dependencies"] == 2
        assert clean.instructor().post("/instructor/reset", json={"sandbox": sandbox}).status_code == 200
        assert events.until("reset")[-1][1]["by"] == "instructor"
        snapshot = events.until("snapshot")[-1][1]
        assert snapshot["picture"]["parent"]["dependencies"] == 3


# -- the shell -----------------------------------------------------------------------


def test_emqlab_reset_does_the_same_from_a_shell(
    clean: LiveSite, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("EMQLAB_VALKEY_URL", clean.valkey_url)
    instructor = clean.instructor()
    room = open_room(instructor, "Thursday")
    member = clean.visitor()
    join(member, room["code"])
    instructor.post(f"/instructor/rooms/{room['code']}/mode", json={"mode": "together"})
    member.get("/api/widgets/fanin/state")
    one, first = learner(clean)
    two, second = learner(clean)
    clients = (one, two)

    for client in (member, *clients):
        client.post("/api/widgets/fanin/complete-child")
    before = keys_by_sandbox(clean)
    assert cli.main(["reset", "--sandbox", first]) == 0
    after = keys_by_sandbox(clean)
    assert parked(clean, first) == "3" and after[second] == before[second]
    assert after[room["sandbox"]] == before[room["sandbox"]]
    assert f"sandbox {first}" in capsys.readouterr().out

    assert cli.main(["reset", "--room", room["code"].lower()]) == 0
    assert parked(clean, room["sandbox"]) == "3" and keys_by_sandbox(clean)[second] == before[second]
    member.post("/api/widgets/fanin/complete-child")
    assert parked(clean, room["sandbox"]) == "2"
    assert cli.main(["reset", "--room", "Thursday"]) == 0  # by name too
    assert parked(clean, room["sandbox"]) == "3"

    assert cli.main(["reset", "--all"]) == 0
    assert parked(clean, second) == "3"

    assert cli.main(["reset", "--sandbox", "not-an-id"]) == 2
    assert cli.main(["reset", "--sandbox", "s0000000000"]) == 1
    assert cli.main(["reset", "--room", "NOROOM"]) == 1
    assert "no open room" in capsys.readouterr().err
