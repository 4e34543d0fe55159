"""What the class thinks, against the real site on a real valkey-server: the
answers counted per question and round (answers.json's contract), the class
page's stream moved by an answer, "Ask the class" rebuilding each learner's
widget at the step, reveal and a second round, a demo's votes judged against
the instructor's one press, and the results to take away (results.csv, kept
after the class closes)."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

import httpx

from tests.e2e.rooms import DIVE, FANIN_QUESTION, LEGEND, joined, open_class, own_sandbox, predict
from tests.support import Events, LiveSite

QUESTION = FANIN_QUESTION["id"]
FEEDBACK = FANIN_QUESTION["feedback"]
ENTRY = {"widget", "question", "step", "round", "legend", "answered", "answers"}


def class_of_three(site: LiveSite) -> tuple[httpx.Client, str, list[httpx.Client]]:
    instructor, code = open_class(site)
    return instructor, code, [joined(site, code, name) for name in ("Ada", "Grace", "Linus")]


def answers_json(instructor: httpx.Client, code: str) -> dict[str, Any]:
    answer = instructor.get(f"/instructor/rooms/{code}/answers.json")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    return dict(answer.json())


def dependencies(client: httpx.Client) -> int:
    return int(client.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"])


def test_answers_json_counts_each_value_and_verdict_with_exactly_the_contract_fields(clean: LiveSite) -> None:
    instructor, code, (ada, grace, linus) = class_of_three(clean)
    assert predict(ada, 3)["verdict"]["right"] is False
    assert predict(grace, 3)["verdict"]["right"] is False
    assert predict(linus, 2)["verdict"]["right"] is True
    assert predict(instructor, 7)  # the instructor is in the class (its host), not one of its learners
    data = answers_json(instructor, code)
    assert set(data) == {"code", "questions"} and data["code"] == code
    [entry] = data["questions"]
    assert set(entry) == ENTRY
    assert entry == {"widget": "fanin", "question": QUESTION, "step": None, "round": None, "legend": LEGEND,
                     "answered": 3, "answers": [{"value": 3, "count": 2, "right": False},
                                                {"value": 2, "count": 1, "right": True}]}
    page = instructor.get(f"/instructor/rooms/{code}").text
    assert "3 answered" in page and "2 learners" in page and FEEDBACK in page
    projector = instructor.get(f"/instructor/rooms/{code}/projector").text
    assert "3 answered" in projector and "Ada" not in projector and "Grace" not in projector


def test_the_class_page_stream_sends_the_new_counts_when_a_learner_answers(clean: LiveSite) -> None:
    instructor, code, (ada, _, _) = class_of_three(clean)
    with instructor.stream("GET", f"/instructor/rooms/{code}/events", timeout=15) as response:
        events = Events(response)
        first = events.until("roster")[-1][1]
        assert first["answers"] == [] and [r["name"] for r in first["learners"]] == ["Ada", "Grace", "Linus"]
        predict(ada, 3)
        started = time.monotonic()
        while True:
            update = events.until("roster", timeout=5)[-1][1]
            if update["answers"] and update["answers"][0]["answered"] == "1 answered":
                break
        took = time.monotonic() - started
        block = update["answers"][0]
        assert block["waiting"] == "2 not yet: Grace, Linus"
        assert block["answers"] == [{"value": "3", "count": "1 learner", "mark": "not quite"}]
        assert block["common_wrong"] == {"value": "3", "count": "1 learner", "feedback": FEEDBACK}
        assert took < 5  # a liveness bound; the delay itself is measured (docs: the class page's update delay)
    with instructor.stream("GET", f"/instructor/rooms/{code}/events?view=projector", timeout=15) as response:
        events = Events(response)
        update = events.until("roster")[-1][1]
        assert update["learners"] == [] and update["answers"][0]["waiting"] == "2 not yet"


def test_ask_the_class_rebuilds_every_learner_widget_at_the_step_and_counts_two_rounds(clean: LiveSite) -> None:
    instructor, code, (ada, grace, linus) = class_of_three(clean)
    for learner in (ada, grace):
        learner.post("/api/widgets/fanin/complete-child", json={})
    with linus.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        events.until("widget")
        asked = instructor.post(f"/instructor/rooms/{code}/ask", json={"widget": "fanin", "question": QUESTION,
                                                                        "step": 0})
        assert asked.status_code == 200, asked.text
        move = events.until("room")[-1][1]
        assert move["action"] == "goto" and move["widget"] == "fanin" and move["page"] == "/flows/parent-and-children"
        assert LEGEND in move["text"]
    assert [dependencies(c) for c in (ada, grace, linus)] == [3, 3, 3]  # each rebuilt at step 0
    view = linus.get("/room/ask").json()["ask"]
    assert view["legend"] == LEGEND and view["round"] == 1 and view["revealed"] is False and "counts" not in view
    predict(ada, 3)
    predict(grace, 2)
    predict(linus, 2)
    [first] = answers_json(instructor, code)["questions"]
    assert (first["step"], first["round"], first["answered"]) == (0, 1, 3)
    # own sandboxes: until Reveal a learner sees that their answer is in, never whether it was right
    assert linus.get("/room/ask").json()["ask"]["mine"] == (
        "Your answer: 2 — it is in; its verdict shows when your instructor reveals.")
    assert instructor.post(f"/instructor/rooms/{code}/reveal", json={}).status_code == 200
    shown = linus.get("/room/ask").json()["ask"]
    assert shown["mine"] == "Your answer: 2 — Right: Valkey holds :dependencies = 2."
    assert shown["counts"] == [{"value": "2", "count": "2 learners", "mark": "right"},
                               {"value": "3", "count": "1 learner", "mark": "not quite"}]
    assert instructor.post(f"/instructor/rooms/{code}/second-round", json={}).status_code == 200
    assert [dependencies(c) for c in (ada, grace, linus)] == [3, 3, 3]
    assert "counts" not in linus.get("/room/ask").json()["ask"]  # hidden again until revealed
    for learner in (ada, grace, linus):
        predict(learner, 2)
    instructor.post(f"/instructor/rooms/{code}/reveal", json={})
    moved = linus.get("/room/ask").json()["ask"]["moved"]
    assert moved == [{"value": "2", "first": 2, "second": 3}, {"value": "3", "first": 1, "second": 0}]
    rounds = {q["round"]: q for q in answers_json(instructor, code)["questions"]}
    assert set(rounds) == {1, 2} and rounds[2]["answers"] == [{"value": 2, "count": 3, "right": True}]
    assert "1 learner changed their answer, 1 of them to the right one" in instructor.get(
        f"/instructor/rooms/{code}").text


def test_in_a_demo_learners_vote_and_the_instructor_press_judges_every_vote_against_one_action(
    clean: LiveSite,
) -> None:
    instructor, code, (ada, grace, _) = class_of_three(clean)
    assert instructor.post(f"/instructor/rooms/{code}/ask", json={"pick": f"fanin|{QUESTION}|0"}).status_code == 200
    own = ada.post("/room/answer", json={"answer": 2})
    assert own.status_code == 409 and "in the widget itself" in own.json()["error"]
    assert instructor.post(f"/instructor/rooms/{code}/demo", json={"demo": True}).status_code == 200
    assert instructor.post(f"/instructor/rooms/{code}/ask", json={"pick": f"fanin|{QUESTION}|0"}).status_code == 200
    assert ada.post("/api/widgets/fanin/complete-child", json={}).status_code == 403  # read-only in a demo
    assert ada.post("/room/answer", json={"answer": 2}).status_code == 200
    assert grace.post("/room/answer", json={"answer": "3"}).status_code == 200
    assert "is in" in ada.get("/room/ask").json()["ask"]["mine"]
    pressed = instructor.post(f"/instructor/rooms/{code}/press", json={})
    assert pressed.status_code == 200 and "2 votes judged" in pressed.json()["message"]
    assert dependencies(ada) == 2  # the one action, in the instructor's sandbox
    [entry] = answers_json(instructor, code)["questions"]
    assert entry["answered"] == 2 and entry["round"] == 1
    assert sorted(entry["answers"], key=str) == [{"value": "3", "count": 1, "right": False},
                                                 {"value": 2, "count": 1, "right": True}]
    again = instructor.post(f"/instructor/rooms/{code}/press", json={})
    assert again.status_code == 200  # the question is still open at :dependencies 2; no vote left to judge
    assert "0 votes judged" in again.json()["message"]


def test_the_question_box_is_the_server_drawing_at_first_paint_and_as_html_and_its_form_votes_without_script(
    clean: LiveSite,
) -> None:
    instructor, code, (ada, _, _) = class_of_three(clean)
    assert instructor.post(f"/instructor/rooms/{code}/demo", json={"demo": True}).status_code == 200
    assert instructor.post(f"/instructor/rooms/{code}/ask", json={"pick": f"fanin|{QUESTION}|0"}).status_code == 200
    html = {"Accept": "text/html"}
    box = ada.get("/room/ask", params={"page": DIVE}, headers=html)
    assert box.status_code == 200 and box.headers["content-type"].startswith("text/html")
    legend = f"Your class is asked: {LEGEND}"
    assert legend in box.text and "0 learners of 3 answered" in box.text
    assert f"Demo in class {code}: you are watching the instructor&#39;s sandbox" in box.text
    assert '<form method="post" action="/room/answer" data-role="class-vote">' in box.text
    elsewhere = ada.get("/room/ask", params={"page": "/"}, headers=html).text
    assert legend in elsewhere and 'data-role="class-vote"' not in elsewhere  # the form only on its dive
    page = ada.get(DIVE).text  # the first paint: the same drawing, without a script
    assert legend in page and 'data-role="class-vote"' in page and f"Demo in class {code}" in page
    sent = ada.post("/room/answer", data={"answer": " 2 ", "page": DIVE}, follow_redirects=False)
    assert sent.status_code == 303 and sent.headers["location"] == f"{DIVE}#class-ask"
    assert "Your answer 2 is in: it is judged when your instructor presses." in ada.get(DIVE).text
    assert ada.post("/room/answer", data={"answer": "2", "page": "https://elsewhere.example/"},
                    follow_redirects=False).headers["location"] == "/room"  # back only to a dive of the course
    pressed = instructor.post(f"/instructor/rooms/{code}/press", json={})
    assert pressed.status_code == 200 and "1 vote judged" in pressed.json()["message"]
    # the form's text "2" was read as the number the question asks: judged right
    assert ada.get("/room/ask").json()["ask"]["mine"].startswith("Your answer: 2 — Right")
    assert instructor.post(f"/instructor/rooms/{code}/reveal", json={}).status_code == 200
    assert "<li>2: 1 learner (right)</li>" in ada.get("/room/ask", params={"page": DIVE}, headers=html).text
    refused = ada.post("/room/answer", data={"answer": "2", "page": DIVE})  # a form's refusal: a page, in words
    assert refused.status_code == 409 and refused.headers["content-type"].startswith("text/html")
    assert "the answers of this round are revealed" in refused.text


def test_results_csv_has_a_row_per_learner_with_the_roster_numbers_and_stays_after_the_close(
    clean: LiveSite,
) -> None:
    instructor, code, (ada, grace, linus) = class_of_three(clean)
    predict(ada, 3)
    predict(ada, 1)
    predict(grace, 2)
    clean.redis().hset(f"lab:{{{own_sandbox(clean, code, 'Linus')}}}:progress", mapping={"ex:fan-in": "3/5"})
    answer = instructor.get(f"/instructor/rooms/{code}/results.csv")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(answer.text)))
    header = next(csv.reader(io.StringIO(answer.text)))
    assert header[0] == "name" and header[-1] == "last seen"
    roster = {r["name"]: r for r in instructor.get(f"/instructor/rooms/{code}/roster.json").json()["learners"]}
    assert [row["name"] for row in table] == ["Ada", "Grace", "Linus"]
    for row in table:
        progress = roster[row["name"]]["progress"].get("fanin", {"reached": 0, "asked": 0, "right": 0})
        assert int(row["fanin steps"]) == progress["reached"]
        assert (int(row["predictions asked"]), int(row["predictions right"])) == (progress["asked"],
                                                                                   progress["right"])
    assert table[0]["pages"] == "/flows/parent-and-children" and table[2]["pages"] == ""
    assert table[2]["fan-in checks passed"] == "3" and table[0]["fan-in checks passed"] == ""
    assert instructor.post(f"/instructor/rooms/{code}/close", json={}).status_code == 200
    kept = instructor.get(f"/instructor/rooms/{code}/results.csv")
    assert kept.status_code == 200 and kept.text == answer.text
    assert answers_json(instructor, code)["questions"][0]["answered"] == 2
    assert f"/instructor/rooms/{code}/results.csv" in instructor.get("/instructor").text
    assert clean.redis().ttl(f"lab:results:{code}") > 6 * 86400
    assert linus.get("/room/ask").json() == {"ask": None}


def test_a_name_a_spreadsheet_would_run_is_written_as_text(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    joined(clean, code, "=HYPERLINK(1)")
    rows = list(csv.reader(io.StringIO(instructor.get(f"/instructor/rooms/{code}/results.csv").text)))
    assert rows[1][0] == "'=HYPERLINK(1)"


def test_the_class_stream_ticks_the_ages_apart_and_changes_drawn_only_when_the_class_does(clean: LiveSite) -> None:
    instructor, code, (ada, _, _) = class_of_three(clean)
    assert ada.post("/api/widgets/fanin/complete-child", json={}).status_code == 200  # "N s ago" from now on
    with instructor.stream("GET", f"/instructor/rooms/{code}/events", timeout=15) as response:
        events = Events(response)
        frames = [data for event, data in events.until("roster", timeout=5) if event == "roster"]
        while len(frames) < 3:  # the ages tick each second: a frame each, the page's HTML the same
            frames += [data for event, data in events.until("roster", timeout=5) if event == "roster"]
        assert len({f["drawn"] for f in frames}) == 1
        assert len({tuple(f["seen"].values()) for f in frames}) == 3
        assert all(f["seen"] == {r["id"]: r["seen"] for r in f["learners"]} for f in frames)
        predict(ada, 3)
        events.until("roster", timeout=5, where=lambda data: data["drawn"] != frames[0]["drawn"])
