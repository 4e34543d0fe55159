"""A learner's progress through the real site: an answered prediction comes back
judged against Valkey with the learner's record; /progress lists the record
beside every dive; "Start over" asks first, then lands every scenario afresh,
forgets the record and says so; /api/progress gives the same as JSON.
"""

from __future__ import annotations

import httpx

from server.sandboxes import keys
from tests.support import DIVE, LiveSite, dumped, sandbox_of

QUESTION = "deps-after-complete"


def complete(client: httpx.Client, answer: object) -> httpx.Response:
    return client.post("/api/widgets/fanin/complete-child", json={"predict": {"question": QUESTION, "answer": answer}})


def test_an_answered_action_comes_back_with_its_verdict_and_the_learners_record(clean: LiveSite) -> None:
    client = clean.visitor()
    asked = client.get("/api/widgets/fanin/state").json()["snapshot"]["questions"]
    assert [q["id"] for q in asked if q["action"] == "complete-child"] == [QUESTION]
    answer = complete(client, 2)
    assert answer.status_code == 200, answer.text
    acted = answer.json()
    assert acted["verdict"]["right"] is True
    assert acted["verdict"]["text"] == "Right: Valkey holds :dependencies = 2."
    mine = acted["progress"]
    assert (mine["reached"], mine["asked"], mine["right"]) == (["counted"], 1, 1)
    wrong = complete(client, 7).json()["verdict"]
    assert wrong["right"] is False
    assert wrong["text"].startswith("Not quite: you said 7; Valkey holds :dependencies = 1.")
    record = clean.redis().hgetall(keys.progress_key(sandbox_of(client)))
    assert (record["asked:fanin"], record["right:fanin"], record["m:fanin:counted"]) == ("2", "1", "1")


def test_a_malformed_prediction_is_a_400_naming_the_field_and_writes_nothing(clean: LiveSite) -> None:
    client = clean.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    sandbox = sandbox_of(client)
    valkey = clean.redis()
    before = dumped(valkey, f"*{sandbox}*")
    for body, field in (({"predict": 3}, "(its predict)"),
                        ({"predict": {"question": 3}}, "(its predict, its question)"),
                        ({"predict": {"question": QUESTION, "answer": [2]}}, "(its predict, its answer)"),
                        ({"predict": {"question": QUESTION, "answer": 2, "more": 1}}, "more")):
        answer = client.post("/api/widgets/fanin/complete-child", json=body)
        assert answer.status_code == 400 and field in answer.json()["error"], (body, answer.text)
    assert dumped(valkey, f"*{sandbox}*") == before


def test_an_answer_to_a_question_not_open_for_the_action_runs_it_unjudged(clean: LiveSite) -> None:
    client = clean.visitor()
    answer = client.post("/api/widgets/fanin/claim", json={"predict": {"question": QUESTION, "answer": 2}})
    assert answer.status_code == 200 and answer.json()["verdict"] is None
    assert answer.json()["progress"]["asked"] == 0


def test_the_progress_page_and_its_json_show_each_visitors_own_record(clean: LiveSite) -> None:
    one, two = clean.visitor(), clean.visitor()
    assert complete(one, 9).status_code == 200
    page = one.get("/progress")
    assert page.status_code == 200
    assert 'data-progress-of="fanin"' in page.text and "1 of 8 steps" in page.text
    assert "Not quite: you said 9" in page.text and "Start over…" in page.text
    mine = one.get("/api/progress").json()["widgets"]["fanin"]
    assert (mine["reached"], mine["asked"], mine["right"]) == (["counted"], 1, 0)
    assert mine["verdict"].startswith("Not quite")
    theirs = two.get("/api/progress").json()["widgets"]["fanin"]
    assert (theirs["reached"], theirs["asked"]) == ([], 0)
    dive = one.get("/api/progress").json()["dives"][0]
    assert {"path", "title", "widgets", "summary"} <= set(dive)
    summary = one.get(DIVE).text.split('data-role="dive-progress-summary">')[1].split("<")[0]
    assert summary == dive["summary"] and "0 of 1 prediction right" in summary


def test_start_over_asks_first_and_changes_nothing_until_confirmed(clean: LiveSite) -> None:
    client = clean.visitor()
    assert complete(client, 2).status_code == 200
    sandbox = sandbox_of(client)
    valkey = clean.redis()
    before = dumped(valkey, f"*{sandbox}*")
    asked = client.post("/progress/start-over", data={}, follow_redirects=False)
    assert asked.status_code == 303 and asked.headers["location"] == "/progress?confirm=start-over"
    confirm = client.get(asked.headers["location"]).text
    assert 'data-role="confirm-start-over"' in confirm and "cannot be undone" in confirm
    assert dumped(valkey, f"*{sandbox}*") == before


def test_start_over_confirmed_lands_every_scenario_afresh_forgets_the_record_and_says_so(clean: LiveSite) -> None:
    client = clean.visitor()
    assert complete(client, 2).status_code == 200
    sandbox = sandbox_of(client)
    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/progress?done=start-over"
    said = client.get(done.headers["location"]).text
    assert 'data-role="started-over"' in said and "your record is forgotten" in said
    assert not clean.redis().exists(keys.progress_key(sandbox))
    snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
    assert snap["readout"].startswith("0 of 3 children complete") and snap["progress"]["reached"] == []


def test_start_over_from_another_site_is_refused_and_forgets_nothing(clean: LiveSite) -> None:
    client = clean.visitor()
    assert complete(client, 2).status_code == 200
    refused = client.post("/progress/start-over", data={"confirm": "yes"}, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403 and "cross-site" in refused.json()["error"]
    assert clean.redis().exists(keys.progress_key(sandbox_of(client)))


def test_start_over_refuses_a_multipart_or_oversized_body_in_words_and_writes_nothing(clean: LiveSite) -> None:
    client = clean.visitor()
    assert complete(client, 2).status_code == 200
    sandbox = sandbox_of(client)
    valkey = clean.redis()
    before = dumped(valkey, f"*{sandbox}*")
    assert keys.progress_key(sandbox) in before

    multipart = client.post("/progress/start-over", data={"confirm": "yes"}, files={"f": ("a.bin", b"x" * 4096)})
    assert multipart.status_code == 415 and "application/x-www-form-urlencoded" in multipart.json()["error"]
    oversized = client.post("/progress/start-over", data={"confirm": "yes", "pad": "x" * (1 << 20)})
    assert oversized.status_code == 413 and "larger than" in oversized.json()["error"]
    assert dumped(valkey, f"*{sandbox}*") == before

    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303 and not valkey.exists(keys.progress_key(sandbox))
