"""An action's answer and the stream's snapshot of the same change are one read
(server/live/answers.py), on the real site under uvicorn: the page following
the sandbox gets the very snapshot the action's closing round trip read, its
effects before the answer, and Valkey is not asked for those keys again.
Valkey's slow log, set to keep every command, says which scripts ran."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support import Events, LiveSite

ACTIONS = ["reset", "complete-child", "complete-child", "claim", "complete-child", "reset"]


@pytest.fixture
def logged(clean: LiveSite) -> Iterator[redis.Redis]:
    """Every command Valkey runs, kept in its slow log until read."""
    r = clean.redis()
    slower, kept = r.config_get("slowlog-log-slower-than"), r.config_get("slowlog-max-len")
    r.config_set("slowlog-max-len", 100000)
    r.config_set("slowlog-log-slower-than", 0)
    try:
        yield r
    finally:
        r.config_set("slowlog-log-slower-than", slower["slowlog-log-slower-than"])
        r.config_set("slowlog-max-len", kept["slowlog-max-len"])


def script_modes(r: redis.Redis, queue: str) -> list[str]:
    """The modes of queue_keys.lua run on `queue` since the last call, oldest first."""
    entries = r.slowlog_get(100000)
    r.slowlog_reset()
    modes = []
    for entry in reversed(entries):
        args = [a.decode() if isinstance(a, bytes) else str(a) for a in entry["command"].split()] \
            if isinstance(entry["command"], (str, bytes)) else []
        # EVALSHA sha 2 lab:{q}:state lab:{q}:lock emq:{q}: <mode> ...
        if len(args) > 6 and args[0].upper() == "EVALSHA" and args[5] == f"emq:{{{queue}}}:":
            modes.append(args[6])
    return modes


def snapshot_with(events: Events, ver: int) -> tuple[list[str], dict[str, Any]]:
    """The stream's events up to the snapshot of version `ver`: their names and that snapshot."""
    got = events.until("snapshot", timeout=10, ver=ver)
    return [name for name, _ in got], got[-1][1]


def test_the_page_following_gets_the_actions_own_snapshot_and_valkey_is_not_read_again(
    clean: LiveSite, logged: redis.Redis,
) -> None:
    visitor = clean.visitor()
    opened = visitor.get("/api/widgets/fanin/state").json()["snapshot"]
    queue = opened["queues"][0]["queue"]
    with visitor.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        events.until("snapshot")
        time.sleep(0.2)  # the stream's opening read is done
        script_modes(logged, queue)
        for action in ACTIONS:
            answer = visitor.post(f"/api/widgets/fanin/{action}", json={}, headers={"Origin": clean.url})
            assert answer.status_code == 200, answer.text
            mine = answer.json()["snapshot"]
            names, streamed = snapshot_with(events, mine["ver"])
            assert streamed == mine  # the same snapshot, field for field
            if action != "claim":
                assert "effect" in names  # the change's effects came with it
            time.sleep(0.05)
            modes = script_modes(logged, queue)
            # the action's own lock and closing, and no read of the stream's
            assert "read" not in modes, (action, modes)
            assert modes[-1] == "finish", (action, modes)


def test_a_write_after_the_action_is_read_by_the_stream_not_taken_from_the_answer(
    clean: LiveSite, logged: redis.Redis,
) -> None:
    visitor = clean.visitor()
    queue = visitor.get("/api/widgets/fanin/state").json()["snapshot"]["queues"][0]["queue"]
    with visitor.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        events.until("snapshot")
        answer = visitor.post("/api/widgets/fanin/complete-child", json={}, headers={"Origin": clean.url})
        assert answer.status_code == 200, answer.text
        ver = answer.json()["snapshot"]["ver"]
        snapshot_with(events, ver)
        script_modes(logged, queue)
        # a write from outside any action (as the console makes one), to a row the widget shows
        row = next(k["name"] for k in answer.json()["snapshot"]["queues"][0]["keys"] if k["type"] == "hash")
        logged.hset(row, "note", "from outside")
        got = events.until("snapshot", timeout=5)
        shown = {k["name"]: k for q in got[-1][1]["queues"] for k in q["keys"]}
        assert shown[row]["value"]["note"] == "from outside"
        assert "read" in script_modes(logged, queue)  # read afresh: no action of this change to offer
