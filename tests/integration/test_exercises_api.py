"""The exercises' contract on the real site: what each endpoint answers, and that a
runaway script on a grader leaves the site's own widgets answering."""

from __future__ import annotations

import concurrent.futures
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
from markupsafe import escape

from server.emq import registry
from server.widgets import WIDGETS
from tests.contract import CONSOLE_WORDS
from tests.support import Events, LiveSite

CONTRACT = {"name", "title", "task", "starter", "checks"}
DIVE = "/flows/parent-and-children"
BEST = re.compile(r'<p class="exercise-best" data-role="best">.*?</p>', re.DOTALL)


def test_an_exercise_is_described_as_the_contract_says(clean: LiveSite) -> None:
    client = clean.visitor()
    for name in ("fan-in", "redelivery", "deliver"):
        answer = client.get(f"/api/exercises/{name}")
        assert answer.status_code == 200
        body = answer.json()
        assert set(body) >= CONTRACT and body["name"] == name and len(body["checks"]) >= 5
        for word in (*(w.design.region for w in WIDGETS.values()), CONSOLE_WORDS):  # other widgets' region words
            assert word not in body["title"].lower()
    assert client.get("/api/exercises/nope").status_code == 404


def test_the_course_script_passes_every_check_and_is_kept_as_the_best_result(clean: LiveSite) -> None:
    client = clean.visitor()
    answer = client.post("/api/exercises/fan-in/run", json={"script": registry.script_source("complete")})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["passed"] == body["total"] == len(body["checks"])
    assert all(c["passed"] and c["said"] for c in body["checks"])
    fields = clean.redis().hgetall(next(iter(clean.redis().keys("lab:{*}:progress"))))
    assert fields["ex:fan-in"] == f"{body['total']}/{body['total']}"


def streamed(client: httpx.Client, script: str) -> dict[str, Any]:
    """A run as the dive's script asks for it: its place in line, then its result."""
    with client.stream("POST", "/api/exercises/fan-in/run", json={"script": script},
                       headers={"Accept": "text/event-stream"}) as answer:
        events = Events(answer)
        while (got := events.next(time.monotonic() + 60))[0] != "result":
            assert got[0] == "place", got
    result: dict[str, Any] = got[1]
    return result


def best_line(html: str) -> str:
    """fan-in's best-run line, as a page or a result draws it."""
    found = [line for line in BEST.findall(html) if 'href="/exercises/fan-in"' in line]
    assert len(found) == 1, html
    return found[0]


def test_a_runs_checks_are_one_drawing_streamed_to_the_dive_and_on_the_exercise_page_without_script(
        clean: LiveSite) -> None:
    client = clean.visitor()
    starter = client.get("/api/exercises/fan-in").json()["starter"]  # fails the checks that need its part
    result = streamed(client, starter)
    pictured = [p["check"] for p in result["pictures"]]
    assert pictured and result["passed"] < result["total"]
    page = client.post("/exercises/fan-in/run", data={"script": starter})  # the form, without a script
    assert page.status_code == 200
    for name in pictured:  # a failed check: its keys before and after, in both
        item = f'data-check="{escape(name)}" data-passed="0"><details class="exercise-picture">'
        assert item in result["html"] and item in page.text
    assert result["html"].count("Before your script (") == len(pictured)
    assert result["html"].count("<li ") == result["total"]
    # the dive's status line and the page's summary: one sentence
    assert f'<p class="exercise-summary">{result["summary"]}</p>' in page.text


def test_the_best_run_is_one_sentence_streamed_at_the_dives_first_paint_and_on_the_page_without_script(
        clean: LiveSite) -> None:
    client = clean.visitor()
    assert "Not run yet: your best run will show here." in best_line(client.get(DIVE).text)
    result = streamed(client, registry.script_source("complete"))
    sentence = "Your best run: 8 of 8 checks passed."
    assert sentence in result["best_html"]
    # the dive at first paint draws the very line the result carried, link for the page without script and all
    assert best_line(client.get(DIVE).text) == result["best_html"]
    # the exercise's own page, and its form's run of a worse script: the same sentence (a best never falls)
    assert sentence in client.get("/exercises/fan-in").text
    worse = client.post("/exercises/fan-in/run", data={"script": "return 1"})
    assert worse.status_code == 200 and sentence in worse.text
    assert best_line(streamed(client, "return 1")["best_html"]) == result["best_html"]


def test_bad_scripts_are_refused_in_words_with_their_status(clean: LiveSite) -> None:
    client = clean.visitor()
    does_not_compile = client.post("/api/exercises/fan-in/run", json={"script": "return (("})
    assert does_not_compile.status_code == 422 and "line" in does_not_compile.json()["error"]
    too_large = client.post("/api/exercises/fan-in/run", json={"script": "-- " + "x" * 16_400})
    assert too_large.status_code == 413
    not_utf8 = client.post("/api/exercises/fan-in/run", content=b'{"script": "\\ud800"}',
                           headers={"Content-Type": "application/json"})
    assert not_utf8.status_code == 400
    foreign = client.post("/api/exercises/fan-in/run", json={"script": "return 1"},
                          headers={"Origin": "http://elsewhere.example"})
    assert foreign.status_code == 403
    assert client.post("/api/exercises/fan-in/run", json={"code": "return 1"}).status_code == 400


def test_a_runaway_script_is_stopped_in_words_while_the_sites_widgets_answer(clean: LiveSite) -> None:
    learner, other = clean.visitor(), clean.visitor()
    assert other.get("/api/widgets/fanin/state").status_code == 200

    def runaway() -> httpx.Response:
        return learner.post("/api/exercises/fan-in/run", json={"script": "while true do end"}, timeout=20)

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        pending = pool.submit(runaway)
        statuses = [other.post("/api/widgets/fanin/" + ("reset" if i % 4 == 0 else "complete-child"),
                               json={}).status_code for i in range(10)]
        answer = pending.result()
    assert statuses == [200] * 10
    assert answer.status_code == 200
    assert "stopped" in answer.json()["checks"][0]["said"]
    assert time.monotonic() - started < 10  # a liveness bound, not a speed claim


def test_the_exercise_form_is_bounded_and_refused_in_words_before_anything_is_parsed_or_spooled(
    clean: LiveSite,
) -> None:
    client = clean.visitor()
    form = "/exercises/fan-in/run"
    course = registry.script_source("complete")
    graded = client.post(form, data={"script": course})
    assert graded.status_code == 200 and "checks passed" in graded.text

    over_a_megabyte = client.post(form, data={"script": "x" * 1_100_000})
    assert over_a_megabyte.status_code == 413 and "larger than" in over_a_megabyte.json()["error"]
    many_fields = client.post(form, content="&".join(f"f{n}=x" for n in range(1001)).encode(),
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert many_fields.status_code == 400 and "does not fit" in many_fields.json()["error"]
    multipart = client.post(form, files={"script": ("a.lua", b"return 1")})
    assert multipart.status_code == 415 and "form" in multipart.json()["error"]

    def two_gigabytes_announced_never_sent() -> Iterator[bytes]:
        yield b"--b\r\nContent-Disposition: form-data; name=\"script\"\r\n\r\n"
        for _ in range(64):  # 4 MB sent, in chunks with no length announced: read only up to the cap
            yield b"x" * 65_536

    streamed = client.post(form, content=two_gigabytes_announced_never_sent(),
                           headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert streamed.status_code == 413
    # 2 GB announced, a few bytes sent: answered at once from the declared length
    cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    with socket.create_connection(("127.0.0.1", clean.port), timeout=10) as raw:
        raw.sendall(f"POST {form} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n"
                    "Content-Type: multipart/form-data; boundary=b\r\n"
                    f"Content-Length: {2 * 1024**3}\r\n\r\n--b\r\n".encode())
        assert raw.recv(4096).startswith(b"HTTP/1.1 413 ")
    # only the first, graded run was kept in the learner's record
    progress = clean.redis().hgetall(next(iter(clean.redis().keys("lab:{*}:progress"))))
    assert progress["ex:fan-in"].split("/")[0] == progress["ex:fan-in"].split("/")[1]
