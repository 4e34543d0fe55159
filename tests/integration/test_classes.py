"""Classes against the real site on a real valkey-server: joining by code and
name, the roster (JSON and live), the modes resolved on every request, room
events on the stream, instructor resets that keep a learner's choices, Watch,
and bad input answered with a clear 4xx and nothing written."""

from __future__ import annotations

import time

import httpx
import pytest
from markupsafe import escape

from server.sandboxes.lifecycle import sandbox_of_key
from server.widgets import WIDGETS
from tests.support import DIVE, INSTRUCTOR_TOKEN, Events, LiveSite, sandbox_of

ROSTER_FIELDS = {"name", "page", "widget", "online", "last_seen", "progress"}


def everything(site: LiveSite) -> dict[str, object]:
    """Every key and its value type/size: what 'nothing written' compares."""
    r = site.redis()
    found: dict[str, object] = {}
    for key in r.scan_iter("*"):
        if key.startswith(("lab:attempts:", "emq:{lab-heartbeat}")):
            continue  # a refused guess counts against the client; the hub's own heartbeat ticks
        kind = r.type(key)
        found[key] = r.hgetall(key) if kind == "hash" else (kind, r.dump(key))
    return found


def open_class(site: LiveSite) -> tuple[httpx.Client, str]:
    instructor = site.instructor()
    answer = instructor.post("/instructor/rooms", json={"name": "Tuesday"})
    assert answer.status_code == 201, answer.text
    return instructor, answer.json()["room"]["code"]


def joined(site: LiveSite, code: str, name: str) -> httpx.Client:
    client = site.visitor()
    answer = client.post("/room/join", json={"code": code, "name": name})
    assert answer.status_code == 200, answer.text
    return client


def roster(instructor: httpx.Client, code: str) -> dict:
    answer = instructor.get(f"/instructor/rooms/{code}/roster.json")
    assert answer.status_code == 200, answer.text
    return answer.json()


def fanin_dependencies(client: httpx.Client) -> int:
    return client.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"]


# -- joining -------------------------------------------------------------------------


def test_joining_with_an_unknown_code_answers_404_and_writes_nothing(clean: LiveSite) -> None:
    client = clean.visitor()
    before = everything(clean)
    answer = client.post("/room/join", json={"code": "ABC234", "name": "Ada"})
    assert answer.status_code == 404
    assert "no open room has the code ABC234" in answer.json()["error"]
    assert everything(clean) == before


@pytest.mark.parametrize("name", ["", "   ", "x" * 41, 42, None, "tab\tname\x07"])
def test_an_empty_over_long_or_unreadable_name_is_refused_with_400_and_writes_nothing(
    clean: LiveSite, name: object
) -> None:
    _, code = open_class(clean)
    client = clean.visitor()
    before = everything(clean)
    answer = client.post("/room/join", json={"code": code, "name": name})
    assert answer.status_code == 400, answer.text
    assert "name" in answer.json()["error"]
    assert everything(clean) == before
    assert roster(clean.instructor(), code)["learners"] == []


def test_a_name_of_forty_characters_is_accepted_with_its_spaces_collapsed(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    joined(clean, code, "  " + "y" * 20 + "   " + "z" * 19 + " ")
    assert [row["name"] for row in roster(instructor, code)["learners"]] == ["y" * 20 + " " + "z" * 19]


def test_markup_in_a_name_is_shown_as_text_on_the_class_page_and_in_the_roster(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    name = '<script>alert("x")</script><b>Ada</b>'
    joined(clean, code, name)
    page = instructor.get(f"/instructor/rooms/{code}")
    assert page.status_code == 200
    assert "<b>Ada</b>" not in page.text and "<script>alert" not in page.text
    assert str(escape(name)) in page.text
    assert roster(instructor, code)["learners"][0]["name"] == name


def test_a_learner_keeps_their_name_after_leaving_and_joining_again(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    client = joined(clean, code, "Grace Hopper")
    assert client.post("/room/leave", json={}).status_code == 200
    assert roster(instructor, code)["learners"] == []
    assert 'value="Grace Hopper"' in client.get("/room").text
    assert client.post("/room/join", json={"code": code, "name": "Grace Hopper"}).status_code == 200
    assert [row["name"] for row in roster(instructor, code)["learners"]] == ["Grace Hopper"]


# -- who may see and change a class --------------------------------------------------


def test_a_learner_calling_instructor_endpoints_is_refused_with_403_and_nothing_is_written(clean: LiveSite) -> None:
    _, code = open_class(clean)
    learner = joined(clean, code, "Ada")
    learner.post("/api/widgets/fanin/complete-child")
    before = everything(clean)
    for path, body in [
        (f"/instructor/rooms/{code}/mode", {"mode": "demo"}),
        (f"/instructor/rooms/{code}/demo", {"demo": True}),
        (f"/instructor/rooms/{code}/bring", {"page": DIVE}),
        (f"/instructor/rooms/{code}/reset-learners", {"confirm": True}),
        (f"/instructor/rooms/{code}/close", {}),
        ("/instructor/reset", {"all": True}),
    ]:
        answer = learner.post(path, json=body)
        assert answer.status_code == 403, path
        assert "instructor's" in answer.json()["error"]
    assert learner.get(f"/instructor/rooms/{code}/roster.json").status_code == 403
    assert learner.get(f"/instructor/rooms/{code}/events").status_code == 403
    assert everything(clean) == before


def test_roster_json_takes_the_bearer_token_and_answers_401_without_it(clean: LiveSite) -> None:
    _, code = open_class(clean)
    stranger = clean.client()
    assert stranger.get(f"/instructor/rooms/{code}/roster.json").status_code == 401
    bearer = {"Authorization": f"Bearer {INSTRUCTOR_TOKEN}"}
    answer = stranger.get(f"/instructor/rooms/{code}/roster.json", headers=bearer)
    assert answer.status_code == 200
    assert answer.json() == {"code": code, "mode": "own", "learners": []}
    assert stranger.get("/instructor/rooms/ABC234/roster.json", headers=bearer).status_code == 404
    assert stranger.get("/instructor/rooms/nope!/roster.json", headers=bearer).status_code == 400


def test_a_forged_room_cookie_is_refused_with_403_on_an_action_and_nothing_is_written(clean: LiveSite) -> None:
    client = clean.visitor()
    own = sandbox_of(client)
    client.cookies.set("emqlab_room", "IkFCQzIzNCI.forged.signature")
    before = everything(clean)
    answer = client.post("/api/widgets/fanin/complete-child")
    assert answer.status_code == 403
    assert "class cookie is not one this site signed" in answer.json()["error"]
    assert everything(clean) == before
    assert 'emqlab_room=""' in answer.headers.get("set-cookie", "")  # dropped
    client.cookies.delete("emqlab_room")
    assert sandbox_of(client) == own


def test_a_room_cookie_copied_to_a_visitor_who_never_joined_does_not_put_them_in_the_class(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    member = joined(clean, code, "Ada")
    instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"})
    outsider = clean.visitor()
    own = sandbox_of(outsider)
    outsider.cookies.set("emqlab_room", member.cookies["emqlab_room"])
    assert sandbox_of(outsider) == own
    assert sandbox_of(member) != sandbox_of(outsider)


# -- the roster ------------------------------------------------------------------------


def test_the_roster_shows_each_learner_with_page_widget_progress_and_last_activity(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    grace = joined(clean, code, "Grace")
    started = time.time()
    headers = {"Referer": clean.url + DIVE}
    assert ada.post("/api/widgets/fanin/complete-child", headers=headers).status_code == 200
    assert grace.get("/api/widgets/fanin/state", headers=headers).status_code == 200
    data = roster(instructor, code)
    assert data["code"] == code and data["mode"] == "own"
    rows = {row["name"]: row for row in data["learners"]}
    assert set(rows) == {"Ada", "Grace"}
    assert all(set(row) == ROSTER_FIELDS for row in rows.values())
    assert rows["Ada"]["page"] == DIVE and rows["Ada"]["widget"] == "fanin"
    assert (
        rows["Ada"]["progress"]["fanin"]["reached"] == 1
        and rows["Ada"]["progress"]["fanin"]["steps"] == len(WIDGETS["fanin"].tour)
    )
    assert "fanin" not in rows["Grace"]["progress"]
    assert rows["Ada"]["last_seen"] >= started - 1
    assert rows["Ada"]["online"] is False  # no page of theirs is open
    assert fanin_dependencies(grace) == 3  # Ada's completion stayed in Ada's sandbox


def test_a_learner_is_online_while_a_stream_of_theirs_is_open(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    with ada.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)  # held: dropping it closes the stream
        events.until("snapshot")
        assert roster(instructor, code)["learners"][0]["online"] is True
    deadline = time.time() + 15  # the server hears the disconnect when its loop gets to it
    while roster(instructor, code)["learners"][0]["online"] and time.time() < deadline:
        time.sleep(0.1)
    assert roster(instructor, code)["learners"][0]["online"] is False


def test_the_roster_stream_sends_the_roster_again_when_a_learner_acts(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    with instructor.stream("GET", f"/instructor/rooms/{code}/events", timeout=15) as response:
        events = Events(response)
        first = events.until("roster")[-1][1]
        assert [row["name"] for row in first["learners"]] == ["Ada"]
        ada.post("/api/widgets/fanin/complete-child")
        later = events.until("roster", timeout=5)
        while later[-1][1]["learners"][0]["progress"].get("fanin") is None:
            later = events.until("roster", timeout=5)
        assert later[-1][1]["learners"][0]["progress"]["fanin"]["reached"] == 1
        assert later[-1][1]["learners"][0]["progress_text"].startswith(f"fanin 1 of {len(WIDGETS['fanin'].tour)} steps")


# -- modes, events and resets ---------------------------------------------------------


def test_a_mode_change_reaches_an_open_stream_as_a_room_event_which_ends_it(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    with ada.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        events.until("snapshot")
        assert instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "demo"}).status_code == 200
        event = events.until("room")[-1][1]
        assert event["action"] == "mode" and event["mode"] == "demo" and event["reconnect"] is True
        assert "read-only" in event["text"]
        with pytest.raises(AssertionError):
            events.until("snapshot", timeout=3)  # the stream ended: the page reconnects


def test_bring_everyone_sends_a_goto_event_and_refuses_a_page_that_is_not_a_dive(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    assert instructor.post(f"/instructor/rooms/{code}/bring", json={"page": "https://evil.example/"}).status_code == 400
    with ada.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        events.until("snapshot")
        target = "/flows/cross-queue"
        assert instructor.post(f"/instructor/rooms/{code}/bring", json={"page": target}).status_code == 200
        event = events.until("room")[-1][1]
        assert event["action"] == "goto" and event["page"] == target


def test_a_members_page_without_widgets_follows_the_class_on_a_stream_of_no_widget(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    index = ada.get("/")
    assert '<script type="module" src="/static/room-follow.js">' in index.text
    dive = ada.get("/flows/parent-and-children").text  # its widgets' lab.js follows the class instead
    assert "room-follow.js" not in dive and "room-follow.js" not in clean.visitor().get("/").text
    assert "room-follow.js" not in instructor.get("/").text
    with ada.stream("GET", "/api/stream?widgets=", timeout=15) as response:
        assert response.status_code == 200
        events = Events(response)
        assert events.next()[0] == "status"
        target = "/flows/cross-queue"
        assert instructor.post(f"/instructor/rooms/{code}/bring", json={"page": target}).status_code == 200
        got = events.until("room")
        assert got[-1][1]["action"] == "goto" and got[-1][1]["page"] == target
        assert "snapshot" not in [name for name, _ in got]
        assert roster(instructor, code)["learners"][0]["online"] is True  # the open page counts


def test_reset_every_learner_needs_confirm_and_then_resets_each_learner_keeping_their_choices(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    grace = joined(clean, code, "Grace")
    ada.post("/api/widgets/fanin/complete-child")
    grace.post("/api/widgets/fanin/complete-child")
    assert ada.post("/api/widgets/failure-policy/policy", json={"policy": "id"}).status_code == 200
    before = everything(clean)
    refused = instructor.post(f"/instructor/rooms/{code}/reset-learners", json={})
    assert refused.status_code == 400 and "confirm" in refused.json()["error"]
    assert everything(clean) == before
    answer = instructor.post(f"/instructor/rooms/{code}/reset-learners", json={"confirm": True})
    assert answer.status_code == 200 and answer.json()["reset"] == 2
    assert fanin_dependencies(ada) == fanin_dependencies(grace) == 3
    policy = ada.get("/api/widgets/failure-policy/state").json()["snapshot"]["picture"]["policy"]
    assert policy == "id"  # the widget's own Reset keeps it, so the instructor's does too
    assert [row["name"] for row in roster(instructor, code)["learners"]] == ["Ada", "Grace"]


def test_reset_of_one_learner_leaves_the_other_and_refuses_a_sandbox_not_in_the_class(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    grace = joined(clean, code, "Grace")
    ada.post("/api/widgets/fanin/complete-child")
    grace.post("/api/widgets/fanin/complete-child")
    ada_id = sandbox_of(ada)
    assert instructor.post(f"/instructor/rooms/{code}/learners/{ada_id}/reset", json={}).status_code == 200
    assert (fanin_dependencies(ada), fanin_dependencies(grace)) == (3, 2)
    stranger = sandbox_of(clean.visitor())
    before = everything(clean)
    assert instructor.post(f"/instructor/rooms/{code}/learners/{stranger}/reset", json={}).status_code == 404
    assert instructor.post(f"/instructor/rooms/{code}/learners/x*y/reset", json={}).status_code == 404
    assert everything(clean) == before


def test_watch_shows_the_instructor_a_learner_sandbox_read_only(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    ada.post("/api/widgets/fanin/complete-child", headers={"Referer": clean.url + DIVE})
    ada_id = sandbox_of(ada)
    answer = instructor.get(f"/instructor/rooms/{code}/learners/{ada_id}/watch")
    assert answer.status_code == 303 and answer.headers["location"] == DIVE
    state = instructor.get("/api/widgets/fanin/state").json()
    assert state["room"]["readonly"] is True and state["room"]["watching"] == ada_id
    assert state["snapshot"]["picture"]["parent"]["dependencies"] == 2
    before = {k for k in clean.redis().scan_iter("*") if sandbox_of_key(k) == ada_id}
    refused = instructor.post("/api/widgets/fanin/complete-child")
    assert refused.status_code == 403 and "read-only" in refused.json()["error"]
    assert fanin_dependencies(ada) == 2
    assert {k for k in clean.redis().scan_iter("*") if sandbox_of_key(k) == ada_id} == before
    assert instructor.post("/instructor/watch/stop", json={}).status_code == 200
    assert sandbox_of(instructor) != ada_id


def test_the_class_lives_in_valkey_so_a_second_site_serves_the_same_class(clean: LiveSite) -> None:
    from tests.support import running

    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"})
    with running(clean.valkey_url) as other:
        moved = other.client(cookies=dict(ada.cookies))
        assert sandbox_of(moved) == sandbox_of(ada)
        bearer = {"Authorization": f"Bearer {INSTRUCTOR_TOKEN}"}
        seen = other.client().get(f"/instructor/rooms/{code}/roster.json", headers=bearer).json()
        assert seen["mode"] == "together" and [r["name"] for r in seen["learners"]] == ["Ada"]
