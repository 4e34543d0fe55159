"""Class tools and predictions that say what is true (issue 41), against the real
site on a real valkey-server: a question is offered and judged only where its
press can act; the policy question names its child; an asked question's verdict
waits for Reveal in own sandboxes; every answer is kept per mode, round and
step; online counts a dead site left behind lapse; Stuck counts from the last
action in this class; /instructor names no class that closed."""

from __future__ import annotations

import csv
import io
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import DIVE, FANIN_QUESTION, class_site, joined, open_class, own_sandbox, predict
from tests.support import Events, LiveSite

PRESENCE_TTL = 3  # s: a dead site's page stops counting within this (the site's default is 45)


@pytest.fixture(scope="module")
def site(valkey_server: ValkeyProcess) -> Iterator[LiveSite]:
    with class_site(valkey_server.url, {"EMQLAB_STREAM_PING": "1",
                                        "EMQLAB_PRESENCE_TTL": str(PRESENCE_TTL)}) as live:
        yield live


def press(client: httpx.Client, widget: str, action: str, question: str | None = None,
          answer: object = None) -> dict[str, Any]:
    body = {"predict": {"question": question, "answer": answer}} if question else {}
    reply = client.post(f"/api/widgets/{widget}/{action}", json=body)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def offered(client: httpx.Client, widget: str) -> dict[str, str]:
    """The open questions of a widget: action -> legend."""
    snap = client.get(f"/api/widgets/{widget}/state").json()["snapshot"]
    return {q["action"]: q["legend"] for q in snap["questions"]}


def asked_count(client: httpx.Client, widget: str) -> int:
    return int(client.get(f"/api/widgets/{widget}/state").json()["snapshot"]["progress"]["asked"])


def answers_of(instructor: httpx.Client, code: str) -> list[dict[str, Any]]:
    answer = instructor.get(f"/instructor/rooms/{code}/answers.json")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["questions"])


def roster(instructor: httpx.Client, code: str) -> dict[str, dict[str, Any]]:
    found = instructor.get(f"/instructor/rooms/{code}/roster.json").json()["learners"]
    return {row["name"]: row for row in found}


# -- item 5: verdicts only where something ran -------------------------------------------------


def test_complete_child_with_no_child_left_offers_no_question_and_a_press_with_an_answer_is_not_judged(
    clean: LiveSite,
) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    # a late completion retires JOBchild1 uncounted; the two others complete: :dependencies 1, no child left
    for action in ("reset", "claim", "lapse", "late", "complete-child", "complete-child"):
        press(ada, "fanin", action)
    snap = ada.get("/api/widgets/fanin/state").json()["snapshot"]
    assert snap["picture"]["parent"]["dependencies"] == 1
    assert "complete-child" not in offered(ada, "fanin")
    before = asked_count(ada, "fanin")
    acted = press(ada, "fanin", "complete-child", FANIN_QUESTION["id"], 0)
    assert acted["verdict"] is None and acted["outcome"]["kind"] == "info"
    assert "not judged" in acted["outcome"]["text"]
    assert asked_count(ada, "fanin") == before  # not counted in progress
    assert answers_of(instructor, code) == []  # nor in the class's answers


def test_a_stale_completion_is_asked_about_only_while_a_child_is_claimed(clean: LiveSite) -> None:
    visitor = clean.visitor()
    press(visitor, "fanin", "reset")
    assert "stale" not in offered(visitor, "fanin")  # nothing claimed: the stale press has nothing to refuse
    acted = press(visitor, "fanin", "stale", "deps-after-stale", 3)
    assert acted["verdict"] is None and asked_count(visitor, "fanin") == 0
    press(visitor, "fanin", "claim")
    assert "stale" in offered(visitor, "fanin")
    acted = press(visitor, "fanin", "stale", "deps-after-stale", 3)
    assert acted["verdict"]["right"] is True and asked_count(visitor, "fanin") == 1


# -- item 8: the policy question names its child -----------------------------------------------


def test_the_failure_policy_question_names_the_child_the_press_takes_and_its_token(clean: LiveSite) -> None:
    visitor = clean.visitor("/flows/cross-queue")
    press(visitor, "failure-policy", "reset")
    press(visitor, "failure-policy", "mixed")
    legend = offered(visitor, "failure-policy")["fail-child"]
    assert legend == "Predict: what happens to the parent when JOBchild1 (parent_policy fp) dies at its cap?"
    acted = press(visitor, "failure-policy", "fail-child", "policy-fate", "failed")
    assert acted["outcome"]["detail"]["child"] == "JOBchild1"  # the child the legend named
    assert acted["verdict"]["right"] is True and acted["verdict"]["legend"] == legend


# -- item 9: own sandboxes, an asked question's verdict waits for Reveal ------------------------


def test_in_own_sandboxes_an_asked_verdict_is_hidden_until_reveal_then_counted(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, grace = joined(clean, code, "Ada"), joined(clean, code, "Grace")
    pick = f"fanin|{FANIN_QUESTION['id']}|0"
    assert instructor.post(f"/instructor/rooms/{code}/ask", json={"pick": pick}).status_code == 200
    acted = predict(ada, 3)
    said = acted["verdict"]["text"]
    assert said.startswith("Your answer 3 is in") and "Not quite" not in said and "Valkey holds" not in said
    shown = ada.get("/api/widgets/fanin/state").json()["snapshot"]["outcome"]["verdict"]["text"]
    assert shown == said  # every page of hers paints the same: no verdict
    assert asked_count(ada, "fanin") == 0  # nor does her progress tell right from wrong yet
    predict(grace, 2)
    assert "Right" not in grace.get("/room/ask").json()["ask"]["mine"]
    assert instructor.post(f"/instructor/rooms/{code}/reveal", json={}).status_code == 200
    assert ada.get("/room/ask").json()["ask"]["mine"].startswith("Your answer: 3 — Not quite: you said 3")
    rows = roster(instructor, code)
    assert rows["Ada"]["progress"]["fanin"]["asked"] == 1 and rows["Ada"]["progress"]["fanin"]["right"] == 0
    assert rows["Grace"]["progress"]["fanin"]["right"] == 1
    # met on their own (no question asked), the verdict shows at once as before
    assert instructor.post(f"/instructor/rooms/{code}/ask/end", json={}).status_code == 200
    assert predict(ada, 1)["verdict"]["text"].startswith("Right")


# -- item 10: every answer kept by mode, round and step -----------------------------------------


def test_a_together_answer_keeps_the_own_answer_and_results_csv_holds_both_and_the_demo_votes(
    clean: LiveSite,
) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    assert predict(ada, 3)["verdict"]["right"] is False  # own sandbox, wrong
    assert instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"}).status_code == 200
    assert predict(ada, 2)["verdict"]["right"] is True  # the shared sandbox, right
    [entry] = answers_of(instructor, code)
    assert entry["answered"] == 1 and sorted(entry["answers"], key=str) == [
        {"value": 2, "count": 1, "right": True}, {"value": 3, "count": 1, "right": False}]
    assert instructor.post(f"/instructor/rooms/{code}/demo", json={"demo": True}).status_code == 200
    pick = f"fanin|{FANIN_QUESTION['id']}|0"
    assert instructor.post(f"/instructor/rooms/{code}/ask", json={"pick": pick}).status_code == 200
    assert ada.post("/room/answer", json={"answer": 2}).status_code == 200
    pressed = instructor.post(f"/instructor/rooms/{code}/press", json={})
    assert pressed.status_code == 200 and "1 vote judged" in pressed.json()["message"]
    table = list(csv.reader(io.StringIO(instructor.get(f"/instructor/rooms/{code}/results.csv").text)))
    header, row = table[0], dict(zip(table[0], table[1], strict=True))
    assert header[0] == "name" and header[-1] == "last seen"
    assert row["fanin deps-after-complete (own)"] == "3 (not quite)"
    assert row["fanin deps-after-complete (together)"] == "2 (right)"
    assert row["fanin deps-after-complete (demo, asked at step 0, round 1)"] == "2 (right)"
    assert (row["class answers"], row["class answers right"]) == ("3", "2")


# -- item 11: online counts that lapse; Stuck from this class -----------------------------------


def test_a_page_left_open_when_the_site_was_killed_stops_counting_online_within_its_ttl(
    valkey_server: ValkeyProcess,
) -> None:
    env = {"EMQLAB_STREAM_PING": "1", "EMQLAB_PRESENCE_TTL": str(PRESENCE_TTL)}
    with class_site(valkey_server.url, env) as first:
        instructor, code = open_class(first)
        ada = joined(first, code, "Ada")
        secret = first.env["EMQLAB_DATA_DIR"]
        with ada.stream("GET", "/api/stream?widgets=fanin", headers={"Referer": first.url + DIVE},
                        timeout=15) as got:
            held = Events(got)  # held: dropping the reader closes the stream
            held.until("widget")
            assert roster(instructor, code)["Ada"]["online"] is True
            assert first.proc is not None
            first.proc.send_signal(signal.SIGKILL)  # no goodbye from the stream
            first.proc.wait(timeout=10)
    with class_site(valkey_server.url, {**env, "EMQLAB_DATA_DIR": secret}) as second:
        again = second.instructor()
        deadline = time.monotonic() + PRESENCE_TTL + 2
        while roster(again, code)["Ada"]["online"] and time.monotonic() < deadline:
            time.sleep(0.25)
        row = roster(again, code)["Ada"]
        assert row["online"] is False and row["page"] is None


def test_an_open_page_stays_online_past_its_ttl_because_its_stream_beats(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    with ada.stream("GET", "/api/stream?widgets=fanin", headers={"Referer": clean.url + DIVE}, timeout=20) as got:
        held = Events(got)  # held: dropping the reader closes the stream
        held.until("widget")
        time.sleep(PRESENCE_TTL * 2)  # two lives of an entry: only the beats keep it
        assert roster(instructor, code)["Ada"]["online"] is True
    deadline = time.monotonic() + 5
    while roster(instructor, code)["Ada"]["online"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert roster(instructor, code)["Ada"]["online"] is False  # closed: the entry went at once


def test_a_learner_idle_before_joining_is_not_stuck_the_moment_they_join(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    grace = joined(clean, code, "Grace")
    predict(grace, 2)
    sandbox = own_sandbox(clean, code, "Grace")
    # her last action was 8 minutes ago, elsewhere; she joins this class now
    clean.redis().hset(f"lab:{{{sandbox}}}:meta", "seen", int((time.time() - 480) * 1000))
    with grace.stream("GET", "/api/stream?widgets=fanin", headers={"Referer": clean.url + DIVE}, timeout=15) as got:
        held = Events(got)  # held: dropping the reader closes the stream
        held.until("widget")
        page = instructor.get(f"/instructor/rooms/{code}").text
        assert "Stuck" not in page


# -- item 12: /instructor names no class that closed ---------------------------------------------


def test_instructor_page_says_you_are_in_a_class_only_while_it_is_open(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    assert instructor.post(f"/instructor/rooms/{code}/join", json={}).status_code == 200
    assert "You are in class" in instructor.get("/instructor").text
    assert instructor.post(f"/instructor/rooms/{code}/close", json={}).status_code == 200
    page = instructor.get("/instructor").text
    assert "You are in class" not in page and code in page  # its results are still listed
