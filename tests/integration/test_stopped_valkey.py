"""A Valkey that is stopped, not dead (SIGSTOP), answers nothing at all: a
request still gets its answer, a 503 in words (a page to a browser, JSON to a
script, a stream too until it starts answering), when its one deadline passes,
and the site works again when Valkey goes on (SIGCONT)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import joined, open_class
from tests.support import DIVE, Events, LiveSite, running, streaming


@pytest.fixture
def stoppable() -> Iterator[tuple[ValkeyProcess, LiveSite]]:
    with ValkeyProcess() as valkey, running(valkey.url) as site:
        yield valkey, site


def test_a_stopped_valkey_makes_requests_answer_503_in_words_and_a_continued_one_serves_again(
        stoppable: tuple[ValkeyProcess, LiveSite]) -> None:
    valkey, site = stoppable
    client = site.visitor()
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    assert valkey.proc is not None
    os.kill(valkey.proc.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(3) as threads:  # one deadline each, waited out together
            action = threads.submit(client.post, "/api/widgets/fanin/complete-child", json={}, timeout=30)
            page = threads.submit(client.get, DIVE, headers={"Accept": "text/html"}, timeout=30)
            # a streamed run has the deadline too until it answers: not a request that waits forever
            run = threads.submit(client.post, "/api/exercises/fan-in/run", json={"script": "return 1"}, timeout=30,
                                 headers={"Accept": "text/event-stream"})
            answers = action.result(), page.result(), run.result()
        for answer in (answers[0], answers[2]):
            assert answer.status_code == 503 and "Valkey did not answer in time" in answer.json()["error"]
        # a browser's page request gets the site's error page, in words, not JSON
        assert answers[1].status_code == 503 and answers[1].headers["content-type"].startswith("text/html")
        assert "Valkey did not answer in time" in answers[1].text and "<main" in answers[1].text
        assert time.monotonic() - started < 20  # a liveness bound: the request's deadline, not a hang
    finally:
        os.kill(valkey.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 15
    while client.post("/api/widgets/fanin/claim", json={}).status_code != 200:
        assert time.monotonic() < deadline, "the site did not serve again after SIGCONT"
        time.sleep(0.2)


def test_an_open_page_is_told_valkey_is_down_while_it_is_stopped_and_up_again_after(
        stoppable: tuple[ValkeyProcess, LiveSite]) -> None:
    valkey, site = stoppable
    client = site.visitor()
    assert valkey.proc is not None
    with streaming(client, read_timeout=30) as page:
        page.until("status", valkey="up")
        page.until("widget")
        os.kill(valkey.proc.pid, signal.SIGSTOP)
        try:
            # the hub's own reads time out (a stopped Valkey answers nothing and drops nothing): "down"
            page.until("status", timeout=20, valkey="down")
        finally:
            os.kill(valkey.proc.pid, signal.SIGCONT)
        page.until("status", timeout=20, valkey="up")  # the hub follows it again, and the page is told
        page.until("widget", timeout=10)  # and drawn afresh from Valkey


def test_an_open_class_page_is_told_valkey_is_down_while_it_is_stopped_and_follows_the_class_after(
        stoppable: tuple[ValkeyProcess, LiveSite]) -> None:
    valkey, site = stoppable
    instructor, code = open_class(site)
    joined(site, code, "Ada")
    assert valkey.proc is not None
    with instructor.stream("GET", f"/instructor/rooms/{code}/events", timeout=30) as response:
        events = Events(response)
        events.until("roster", where=lambda data: data.get("count") == 1)
        os.kill(valkey.proc.pid, signal.SIGSTOP)
        try:
            # the class stream's reads have a deadline: the page is told, it does not wait in silence
            events.until("roster", timeout=20, where=lambda data: "unreachable" in data.get("down", ""))
        finally:
            os.kill(valkey.proc.pid, signal.SIGCONT)
        joined(site, code, "Grace")
        events.until("roster", timeout=20, where=lambda data: data.get("count") == 2)
