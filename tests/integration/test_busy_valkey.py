"""While a script holds Valkey (BUSY), every API answers a worded 503, never a
500, and once SCRIPT KILL ends it the site serves again (issue 38: one console
line kept Valkey BUSY for 2 min 20 s and every API answered 500 meanwhile).
Values read back from a learner's keys are checked before any write: a row
whose attempts a console line broke is refused in words and nothing is written."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from server.valkey.process import ValkeyProcess
from tests.support import LiveSite, dumped, running

HOLD = "while true do end"  # runs no write, so SCRIPT KILL ends it


@pytest.fixture
def held_site() -> Iterator[tuple[ValkeyProcess, LiveSite]]:
    with ValkeyProcess() as valkey, running(valkey.url) as site:
        yield valkey, site


def hold_valkey(url: str) -> tuple[threading.Thread, list[Any]]:
    """A script that never ends, sent from a connection of its own; its answer lands in the list."""
    said: list[Any] = []

    def run() -> None:
        try:
            said.append(redis.Redis.from_url(url, socket_timeout=120).eval(HOLD, 0))
        except redis.RedisError as exc:
            said.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    probe = redis.Redis.from_url(url, socket_timeout=30)
    deadline = time.monotonic() + 30
    while True:  # BUSY once the script is past busy-reply-threshold
        try:
            probe.ping()
        except redis.ResponseError as exc:
            if str(exc).startswith("BUSY"):
                return thread, said
        assert time.monotonic() < deadline, "Valkey never answered BUSY"
        time.sleep(0.05)


def test_every_api_answers_a_worded_503_while_a_script_holds_valkey_and_serves_once_it_is_killed(
        held_site: tuple[ValkeyProcess, LiveSite]) -> None:
    valkey, site = held_site
    client = site.visitor()
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 200
    thread, said = hold_valkey(valkey.url)
    try:
        answers = {
            "action": client.post("/api/widgets/fanin/complete-child", json={}, timeout=30),
            "state": client.get("/api/widgets/fanin/state", timeout=30),
            "console write": client.post("/api/console", json={"command": "SET emq:{fanin}:x 1"}, timeout=30),
            "console read": client.post("/api/console", json={"command": "GET emq:{fanin}:x"}, timeout=30),
            "transcript": client.get("/api/console", timeout=30),
            "exercise": client.get("/api/exercises/fan-in", timeout=30),
            "progress": client.get("/progress", timeout=30),
            "newcomer": site.visitor().post("/api/widgets/fanin/claim", json={}, timeout=30),
        }
    finally:
        redis.Redis.from_url(valkey.url, socket_timeout=30).script_kill()
    for what, answer in answers.items():
        assert answer.status_code != 500, (what, answer.text)
        if answer.status_code == 503 and answer.headers.get("content-type", "").startswith("application/json"):
            assert "busy" in answer.json()["error"], (what, answer.text)
    # what needs Valkey to answer at all says so; a page or a description may do without it
    for what in ("action", "state", "console write", "console read", "transcript", "newcomer"):
        assert answers[what].status_code == 503, (what, answers[what].text)
    thread.join(30)
    assert said and "killed" in str(said[0]).lower()
    deadline = time.monotonic() + 15
    while client.post("/api/widgets/fanin/complete-child", json={}).status_code != 200:
        assert time.monotonic() < deadline, "the site did not serve again after SCRIPT KILL"
        time.sleep(0.2)


def test_a_row_whose_attempts_a_console_line_broke_is_refused_in_words_and_nothing_is_written(
        held_site: tuple[ValkeyProcess, LiveSite]) -> None:
    valkey, site = held_site
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    line = client.post("/api/console", json={"command": "HSET emq:{fanin}:job:JOBchild1 attempts abc"})
    assert line.status_code == 200, line.text
    direct = redis.Redis.from_url(valkey.url)
    before = dumped(direct, "emq:*")
    for action in ("claim", "complete-child"):
        refused = client.post(f"/api/widgets/fanin/{action}", json={})
        assert refused.status_code == 409, (action, refused.text)
        assert "attempts = 'abc', not a whole number" in refused.json()["error"]
    claimed = client.post("/api/console", json={
        "command": "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000"})
    assert claimed.json()["reply_lines"][0].startswith("(error) EMQDATA claim"), claimed.text
    assert dumped(direct, "emq:*") == before
    assert client.post("/api/widgets/fanin/reset", json={}).status_code == 200
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 200
