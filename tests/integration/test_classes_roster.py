"""Classes against the real site on a real valkey-server: joining by code and
name, a roster that tells what is so (the widget acted on, the page open,
each learner's own progress in every mode, who is stuck), the modes resolved
on every request, room events on the stream, resets, Watch, and bad input
answered with a clear 4xx and nothing written."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis.asyncio
from markupsafe import escape

from server.sandboxes import keys, rooms
from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import DIVE, class_site, joined, open_class, own_sandbox, predict
from tests.support import Events, LiveSite, dumped, sandbox_of, streaming

ROSTER_FIELDS = {"name", "page", "widget", "online", "last_seen", "progress"}
OTHER_DIVE = "/flows/cross-queue"


@pytest.fixture(scope="module")
def site(valkey_server: ValkeyProcess) -> Iterator[LiveSite]:
    # a ping every second: the site hears a closed page within a second, not fifteen
    with class_site(valkey_server.url, {"EMQLAB_STREAM_PING": "1"}) as live:
        yield live


def everything(site: LiveSite) -> dict[str, object]:
    r = site.redis()
    return dumped(r, skip=("lab:attempts:",))


def roster(instructor: httpx.Client, code: str) -> dict[str, Any]:
    answer = instructor.get(f"/instructor/rooms/{code}/roster.json")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def rows(instructor: httpx.Client, code: str) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in roster(instructor, code)["learners"]}


def dependencies(client: httpx.Client) -> int:
    return int(client.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"])


def complete(client: httpx.Client) -> dict[str, Any]:
    answer = client.post("/api/widgets/fanin/complete-child", json={})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


# -- joining -------------------------------------------------------------------------


def test_joining_with_an_unknown_code_answers_404_and_writes_nothing(clean: LiveSite) -> None:
    client = clean.visitor()
    before = everything(clean)
    answer = client.post("/room/join", json={"code": "ABC234", "name": "Ada"})
    assert answer.status_code == 404 and "no open class has the code ABC234" in answer.json()["error"]
    assert client.post("/room/join", json={"code": "ABC{*}", "name": "Ada"}).status_code == 400
    assert client.post("/room/join", json={"code": 12, "name": "Ada"}).status_code == 400
    assert everything(clean) == before


@pytest.mark.parametrize("name", ["", "   ", "x" * 41, 42, None, "tab\tname\x07", "e" + "\u0301" * 40,
                                  "Ada\u202eevil", "\u0301Ada", "\u200d"])
def test_an_empty_over_long_garbled_or_hiding_name_is_refused_with_400_and_nothing_written(
    clean: LiveSite, name: object
) -> None:
    instructor, code = open_class(clean)
    client = clean.visitor()
    before = everything(clean)
    answer = client.post("/room/join", json={"code": code, "name": name})
    assert answer.status_code == 400, answer.text
    assert "name" in answer.json()["error"]
    assert everything(clean) == before
    assert roster(instructor, code)["learners"] == []


@pytest.mark.parametrize("name", ["👩‍💻 Ada", "👨‍👩‍👧‍👦", "می‌خواهم", "Nguyễn Thị Ánh", "क्षत्रिय",
                                  "  " + "y" * 20 + "   " + "z" * 19 + " "])
def test_names_with_joiners_emoji_sequences_and_marks_that_spell_are_accepted(clean: LiveSite, name: str) -> None:
    instructor, code = open_class(clean)
    joined(clean, code, name)
    assert [row["name"] for row in roster(instructor, code)["learners"]] == [" ".join(name.split())]


def test_markup_in_a_name_is_text_on_the_class_page_and_the_instructor_page(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    name = '<script>alert("x")</script><b>Ada</b>'
    complete(joined(clean, code, name))
    for path in (f"/instructor/rooms/{code}", "/instructor"):
        page = instructor.get(path)
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


def test_a_room_cookie_copied_to_a_visitor_who_never_joined_does_not_put_them_in_the_class(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    member = joined(clean, code, "Ada")
    instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"})
    complete(member)
    outsider = clean.visitor()
    outsider.cookies.set("emqlab_room", member.cookies["emqlab_room"])
    assert dependencies(outsider) == 3 and dependencies(member) == 2


# -- a roster that tells the truth ------------------------------------------------------


def test_the_roster_widget_is_the_one_acted_on_and_the_page_the_one_open(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, grace = joined(clean, code, "Ada"), joined(clean, code, "Grace")
    started = time.time()
    complete(ada)
    grace.get("/api/widgets/fanin/state")  # loading a widget is not acting on it
    with ada.stream("GET", "/api/stream?widgets=", headers={"Referer": clean.url + OTHER_DIVE}, timeout=15) as got:
        held = Events(got)  # held: dropping the reader closes the stream
        held.until("status")
        now = rows(instructor, code)
        assert all(set(row) == ROSTER_FIELDS for row in now.values())
        assert now["Ada"]["widget"] == "fanin" and now["Ada"]["page"] == OTHER_DIVE and now["Ada"]["online"]
        assert now["Ada"]["progress"]["fanin"] == {"reached": 1, "steps": 8, "done": False, "asked": 0,
                                                   "right": 0, "verdict": ""}
        assert now["Ada"]["last_seen"] >= started - 1
        assert now["Grace"]["widget"] is None and now["Grace"]["progress"] == {}
        assert now["Grace"]["page"] is None and now["Grace"]["online"] is False  # no page of hers is open
    deadline = time.time() + 15  # the server hears the disconnect when its loop gets to it
    while rows(instructor, code)["Ada"]["online"] and time.time() < deadline:
        time.sleep(0.1)
    assert rows(instructor, code)["Ada"]["page"] is None


def test_an_instructor_reset_leaves_the_learner_widget_last_seen_and_progress_as_they_were(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    complete(ada)
    before = rows(instructor, code)["Ada"]
    time.sleep(0.05)
    sandbox = own_sandbox(clean, code, "Ada")
    assert instructor.post(f"/instructor/rooms/{code}/learners/{sandbox}/reset", json={}).status_code == 200
    after = rows(instructor, code)["Ada"]
    assert dependencies(ada) == 3
    assert (after["widget"], after["last_seen"], after["progress"]) == (
        before["widget"], before["last_seen"], before["progress"])


def test_working_together_each_action_is_credited_to_the_learner_who_made_it_and_named(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, grace = joined(clean, code, "Ada"), joined(clean, code, "Grace")
    assert instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"}).status_code == 200
    assert instructor.post("/api/widgets/fanin/complete-child", json={}).status_code == 200  # not a learner
    complete(ada)
    complete(grace)
    now = rows(instructor, code)
    # Ada's completion counted a child; Grace's, the last, released the parent too
    assert now["Ada"]["progress"]["fanin"]["reached"] == 1 and now["Grace"]["progress"]["fanin"]["reached"] == 2
    assert now["Ada"]["widget"] == now["Grace"]["widget"] == "fanin"
    outcome = ada.get("/api/widgets/fanin/state").json()["snapshot"]["outcome"]
    assert outcome["by"] == "learner" and outcome["name"] == "Grace" and dependencies(ada) == 0


def test_in_a_demo_learners_only_watch_and_their_record_stays_their_own(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    assert instructor.post(f"/instructor/rooms/{code}/demo", json={"demo": True}).status_code == 200
    before = everything(clean)
    refused = ada.post("/api/widgets/fanin/complete-child", json={})
    assert refused.status_code == 403 and refused.json()["error"].startswith("demo mode")
    assert everything(clean) == before
    complete(instructor)
    assert dependencies(ada) == 2 and rows(instructor, code)["Ada"]["progress"] == {}
    instructor.post(f"/instructor/rooms/{code}/demo", json={"demo": False})
    assert dependencies(ada) == 3


def test_a_learner_is_marked_stuck_after_three_wrong_answers_or_idle_with_a_page_open(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, grace = joined(clean, code, "Ada"), joined(clean, code, "Grace")
    for _ in range(3):
        assert predict(ada, 99)["verdict"]["right"] is False
    page = instructor.get(f"/instructor/rooms/{code}").text
    assert "Stuck: 3 wrong answers in a row on fanin" in page
    predict(grace, 2)
    sandbox = own_sandbox(clean, code, "Grace")
    clean.redis().hset(f"lab:{{{sandbox}}}:meta", "seen", int((time.time() - 400) * 1000))  # her last action
    clean.redis().zadd(f"lab:room:{code}:learners", {sandbox: int((time.time() - 500) * 1000)})  # she joined before
    with grace.stream("GET", "/api/stream?widgets=fanin", headers={"Referer": clean.url + DIVE}, timeout=15) as got:
        held = Events(got)
        held.until("widget")
        page = instructor.get(f"/instructor/rooms/{code}").text
        assert "Stuck: no action for 6 min on fanin, 1 of 8 steps" in page


# -- modes, events, resets and Watch -------------------------------------------------------


def test_a_mode_change_reaches_an_open_stream_as_a_room_event_which_ends_it(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    with ada.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        events.until("widget")
        assert instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "demo"}).status_code == 200
        event = events.until("room")[-1][1]
        assert event["action"] == "mode" and event["reconnect"] is True
        # the page draws its banner again: the server's words say it only watches now
        banner = ada.get(f"/room/ask?page={DIVE}", headers={"Accept": "text/html"}).text
        assert f"Demo in class {code}: you are watching" in banner and "read-only" in banner
        with pytest.raises(AssertionError):
            events.until("widget", timeout=3)  # the stream ended: the page reconnects


def test_bring_everyone_sends_a_goto_to_a_page_without_widgets_too(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    assert "/static/widgets/lab.js" in ada.get("/room").text  # the room page follows the class
    with ada.stream("GET", "/api/stream?widgets=", timeout=15) as response:
        events = Events(response)
        events.until("status")
        assert instructor.post(f"/instructor/rooms/{code}/bring", json={"page": OTHER_DIVE}).status_code == 200
        got = events.until("room")
        assert got[-1][1]["action"] == "goto" and got[-1][1]["page"] == OTHER_DIVE
        assert "snapshot" not in [name for name, _ in got]


def test_reset_every_learner_asks_to_confirm_and_names_the_one_whose_sandbox_could_not_be_reset(
    clean: LiveSite,
) -> None:
    instructor, code = open_class(clean)
    ada, grace = joined(clean, code, "Ada"), joined(clean, code, "Grace")
    complete(ada)
    complete(grace)
    before = everything(clean)
    refused = instructor.post(f"/instructor/rooms/{code}/reset-learners", json={})
    assert refused.status_code == 400 and "confirm" in refused.json()["error"]
    assert everything(clean) == before
    held = own_sandbox(clean, code, "Grace")
    clean.redis().set(f"lab:{{{held}.fanin}}:lock", "another-action", px=20_000)  # her widget stays busy
    answer = instructor.post(f"/instructor/rooms/{code}/reset-learners", json={"confirm": True})
    assert answer.status_code == 200, answer.text
    assert answer.json()["reset"] == 1 and list(answer.json()["failed"]) == [held]
    assert "Grace" in answer.json()["message"] and "failed" in answer.json()["message"]
    clean.redis().delete(f"lab:{{{held}.fanin}}:lock")
    assert (dependencies(ada), dependencies(grace)) == (3, 2)


def test_reset_of_one_learner_leaves_the_other_and_refuses_a_sandbox_not_in_the_class(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, grace = joined(clean, code, "Ada"), joined(clean, code, "Grace")
    complete(ada)
    complete(grace)
    ada_id = own_sandbox(clean, code, "Ada")
    assert instructor.post(f"/instructor/rooms/{code}/learners/{ada_id}/reset", json={}).status_code == 200
    assert (dependencies(ada), dependencies(grace)) == (3, 2)
    before = everything(clean)
    assert instructor.post(f"/instructor/rooms/{code}/learners/s0000000000/reset", json={}).status_code == 404
    assert instructor.post(f"/instructor/rooms/{code}/learners/x*y/reset", json={}).status_code == 404
    assert everything(clean) == before


# -- class keys of another type (an operator's command, a fault: no learner can write them) ------


def broken(site: LiveSite, key: str) -> None:
    """`key` holds a string where the site keeps a hash or a sorted set."""
    site.redis().delete(key)
    site.redis().set(key, "oops")


def member_with_a_broken_record(site: LiveSite) -> tuple[httpx.Client, str, httpx.Client, str]:
    """(the instructor, the class's code, Ada, her activity record's key), the record a string."""
    instructor, code = open_class(site)
    ada = joined(site, code, "Ada")
    meta = keys.meta_key(sandbox_of(ada))
    broken(site, meta)
    return instructor, code, ada, meta


def test_a_member_whose_activity_record_holds_another_type_acts_on_and_the_record_starts_again(
        clean: LiveSite) -> None:
    instructor, code, ada, meta = member_with_a_broken_record(clean)
    r = clean.redis()

    # not "Valkey is unreachable" on every request, nor a roster refused whole
    assert ada.get(DIVE).status_code == 200
    assert [row["name"] for row in roster(instructor, code)["learners"]] == ["(no name)"]
    acted = complete(ada)
    assert acted["progress"]["reached"] == ["counted"]  # the action's record was kept
    assert r.type(meta) == "hash" and r.hget(meta, "widget") == "fanin"
    assert rows(instructor, code)["(no name)"]["widget"] == "fanin"


def test_a_class_record_of_another_type_sends_its_members_to_their_own_sandboxes_and_the_reaper_forgets_it(
        clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    r = clean.redis()
    broken(clean, keys.room_key(code))

    assert ada.get(DIVE).status_code == 200
    complete(ada)  # in her own sandbox, not the class's, and not a 503
    assert dependencies(ada) == 2 and dependencies(clean.visitor()) == 3
    assert instructor.get("/instructor").status_code == 200
    assert instructor.get(f"/instructor/rooms/{code}/roster.json").status_code == 404

    async def reap() -> list[tuple[str, str]]:
        conn = redis.asyncio.Redis.from_url(clean.valkey_url, decode_responses=True)
        try:
            return await rooms.expired(conn)
        finally:
            await conn.aclose()

    # forgotten here, or already by the site's own reaper (it runs every few seconds)
    assert [gone for gone, _ in asyncio.run(reap())] in ([code], [])
    assert not r.exists(keys.room_key(code)) and not r.hexists(rooms.ROOMS_KEY, code)


def test_a_closed_class_is_said_until_dismissed_and_the_dismissal_goes_back_to_its_dive(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    assert instructor.post(f"/instructor/rooms/{code}/close", json={}).status_code == 200
    page = ada.get(DIVE)
    assert "The class was closed" in page.text and f'action="/room/leave?page={DIVE}"' in page.text

    gone = ada.post(f"/room/leave?page={DIVE}", follow_redirects=False, headers={"origin": clean.url})
    assert gone.status_code == 303 and gone.headers["location"] == DIVE
    assert "The class was closed" not in ada.get(DIVE).text
    # a page that is not a dive is no place to go back to
    other = joined(clean, open_class(clean, "Other")[1], "Bea")
    assert other.post("/room/leave?page=https://evil.example/", follow_redirects=False,
                      headers={"origin": clean.url}).headers["location"] == "/room"


@pytest.mark.parametrize(("which", "kind"), [(keys.learners_key, "string"), (keys.answers_key, "list"),
                                              (keys.learners_key, "hash")])
def test_a_class_whose_learners_or_answers_hold_another_type_is_drawn_and_closes(
        clean: LiveSite, which: Any, kind: str) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    r = clean.redis()
    r.delete(which(code))
    {"string": lambda: r.set(which(code), "oops"), "list": lambda: r.rpush(which(code), "oops"),
     "hash": lambda: r.hset(which(code), "oops", "1")}[kind]()

    # the class's bookkeeping starts again: its page and roster are drawn, not refused 409 until it expires
    assert instructor.get(f"/instructor/rooms/{code}").status_code == 200
    assert roster(instructor, code)["code"] == code
    assert ada.post("/room/join", json={"code": code, "name": "Ada"}).status_code == 200
    assert ada.post("/room/leave", headers={"origin": clean.url}).status_code == 303
    assert instructor.post(f"/instructor/rooms/{code}/close", json={}).status_code == 200
    assert not r.exists(keys.room_key(code), *rooms.class_keys(code))


def test_an_activity_record_of_another_type_leaves_the_instructors_home_drawn(clean: LiveSite) -> None:
    instructor, code, ada, _ = member_with_a_broken_record(clean)

    home = instructor.get("/instructor")
    assert home.status_code == 200 and "another type" not in home.text
    assert instructor.get("/instructor/overview").status_code == 200
    assert instructor.get(f"/instructor/rooms/{code}/learners/{sandbox_of(ada)}/watch",
                          follow_redirects=False).status_code == 303
    assert ada.get("/room").status_code == 200


def test_a_visitor_whose_activity_record_holds_another_type_joins_leaves_and_opens_a_page(clean: LiveSite) -> None:
    _, code = open_class(clean)
    ada = clean.visitor()
    r = clean.redis()
    meta = keys.meta_key(sandbox_of(ada))

    broken(clean, meta)
    assert ada.post("/room/join", json={"code": code, "name": "Ada"}).status_code == 200
    assert r.hgetall(meta) == {"name": "Ada", "room": code}
    broken(clean, meta)
    assert ada.post("/room/leave", json={}).status_code == 200
    assert r.type(meta) == "none"  # started again: the class is left, nothing of it kept
    broken(clean, meta)
    with streaming(ada) as events:  # the page's presence starts the record again, not a stream refused
        events.until("widget")
        assert r.type(meta) == "hash" and any(field.startswith("p:") for field in r.hkeys(meta))
