"""Faults behind the site's back, on a Valkey of each test's own (issue 13, items 3 and 4).

Keyspace notifications switched off, with CONFIG allowed (the site switches
them on again) and with CONFIG refused (the site says so and polls); Valkey
out of memory (503s, no 500, streams that say so, recovery by itself).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
import redis

from server.valkey.process import ValkeyProcess
from tests.support import LiveSite, running

PAGES = 10


class LockedConfigValkey(ValkeyProcess):
    """A Valkey whose CONFIG is renamed: the site may not change its settings, the test may."""

    def command(self) -> list[str]:
        return [*super().command(), "--rename-command", "CONFIG", "ADMINCONFIG"]


def deps(snapshot: dict[str, Any]) -> int:
    return int(snapshot["picture"]["parent"]["dependencies"])


def open_stream(client: httpx.Client, stack: ExitStack) -> Iterator[tuple[str, dict[str, Any]]]:
    """The events of one page's stream of the fan-in, one by one."""
    import json

    response = stack.enter_context(client.stream("GET", "/api/stream?widgets=fanin"))
    assert response.status_code == 200

    def events() -> Iterator[tuple[str, dict[str, Any]]]:
        event = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event:
                yield event, json.loads(line.split(":", 1)[1])
    return events()


def first(events: Iterator[tuple[str, dict[str, Any]]], wanted: Any, timeout: float) -> tuple[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout
    for event, data in events:
        if wanted(event, data):
            return event, data
        if time.monotonic() > deadline:
            break
    raise AssertionError(f"no matching event within {timeout} s")


def pages_of(site: LiveSite, stack: ExitStack, count: int) -> tuple[httpx.Client, list[Any]]:
    """One visitor with `count` open pages, each past its first snapshot."""
    visitor = site.visitor()
    stack.callback(visitor.close)
    streams = []
    for _ in range(count):
        page = stack.enter_context(httpx.Client(base_url=site.url, cookies=visitor.cookies, timeout=10))
        events = open_stream(page, stack)
        first(events, lambda e, d: e == "snapshot", 10)
        streams.append(events)
    return visitor, streams


def test_notifications_switched_off_are_detected_and_every_stream_resyncs_within_5s() -> None:
    with ValkeyProcess() as valkey, running(valkey.url) as site, ExitStack() as stack:
        visitor, streams = pages_of(site, stack, PAGES)
        admin = redis.Redis.from_url(valkey.url, decode_responses=True)
        admin.config_set("notify-keyspace-events", "")
        switched_off = time.monotonic()
        answer = visitor.post("/api/widgets/fanin/complete-child")
        assert answer.status_code == 200 and deps(answer.json()["snapshot"]) == 2
        with ThreadPoolExecutor(PAGES) as pool:
            got = list(pool.map(
                lambda events: first(events, lambda e, d: e == "snapshot" and deps(d) == 2, 5), streams))
        assert len(got) == PAGES
        assert time.monotonic() - switched_off < 5
        assert "K" in admin.config_get("notify-keyspace-events")["notify-keyspace-events"]
        fresh = open_stream(stack.enter_context(httpx.Client(base_url=site.url, cookies=visitor.cookies)), stack)
        event, status = next(fresh)
        assert event == "status" and status["notifications"] is True and status["message"] == ""


def test_notifications_off_where_config_is_refused_are_said_plainly_and_streams_follow_by_polling() -> None:
    with LockedConfigValkey() as valkey, running(valkey.url) as site, ExitStack() as stack:
        visitor, streams = pages_of(site, stack, 3)
        admin = redis.Redis.from_url(valkey.url, decode_responses=True)
        admin.execute_command("ADMINCONFIG", "SET", "notify-keyspace-events", "")
        for events in streams:
            _, said = first(events, lambda e, d: e == "status" and d.get("notifications") is False, 6)
            assert "may not switch them on" in said["message"]
        answer = visitor.post("/api/widgets/fanin/complete-child")
        assert answer.status_code == 200
        for events in streams:
            first(events, lambda e, d: e == "snapshot" and deps(d) == 2, 4)
        fresh = open_stream(stack.enter_context(httpx.Client(base_url=site.url, cookies=visitor.cookies)), stack)
        event, status = next(fresh)
        assert event == "status" and status["notifications"] is False
        admin.execute_command("ADMINCONFIG", "SET", "notify-keyspace-events", "KA")
        first(streams[0], lambda e, d: e == "status" and d.get("notifications") is True, 5)


@pytest.fixture
def full_valkey() -> Iterator[ValkeyProcess]:
    with ValkeyProcess() as valkey:
        yield valkey


def fill(valkey: ValkeyProcess) -> redis.Redis:
    """Valkey past its maxmemory: a 4 MB fill key, then a limit at half of what it uses."""
    admin = redis.Redis.from_url(valkey.url, decode_responses=True)
    admin.set("fill", "x" * 4_000_000)
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", str(used // 2))
    return admin


def test_out_of_memory_answers_503_and_recovers_when_memory_is_raised(full_valkey: ValkeyProcess) -> None:
    with running(full_valkey.url) as site, ExitStack() as stack:
        visitor, streams = pages_of(site, stack, 1)
        instructor = site.instructor()
        stack.callback(instructor.close)
        room = instructor.post("/instructor/rooms", json={"name": "before"}).json()["room"]["code"]
        newcomer = site.visitor()
        stack.callback(newcomer.close)
        admin = fill(full_valkey)
        answers = {
            "action": visitor.post("/api/widgets/fanin/complete-child"),
            "state of a new sandbox": newcomer.get("/api/widgets/fanin/state"),
            "instructor": instructor.post("/instructor/rooms", json={"name": "during"}),
            "room": newcomer.post("/room/join", json={"code": room, "name": "Ada"}),
            "console write": visitor.post("/api/console", json={"command": "HSET emq:{fanin}:job:JOBparent note x"}),
        }
        for what, answer in answers.items():
            assert answer.status_code == 503, (what, answer.text)
            assert "out of memory" in answer.json()["error"], what
        # the console's transcript line is Valkey's own refusal
        assert answers["console write"].json()["reply_lines"][0].startswith("(error) OOM"), (
            answers["console write"].text
        )
        parents = list(admin.scan_iter("emq:{*.fanin}:job:JOBparent"))
        assert parents and all(admin.hget(k, "note") is None for k in parents)  # the write wrote nothing
        _, said = first(streams[0], lambda e, d: e == "status" and d.get("memory") == "full", 5)
        assert "out of memory" in said["message"]
        late = open_stream(stack.enter_context(httpx.Client(base_url=site.url, cookies=newcomer.cookies)), stack)
        first(late, lambda e, d: e == "status" and "out of memory" in d.get("message", ""), 5)
        admin.config_set("maxmemory", "0")
        raised = time.monotonic()
        first(streams[0], lambda e, d: e == "status" and d.get("memory") == "ok", 5)
        answer = visitor.post("/api/widgets/fanin/complete-child")
        assert answer.status_code == 200 and deps(answer.json()["snapshot"]) == 2
        assert newcomer.get("/api/widgets/fanin/state").status_code == 200
        assert time.monotonic() - raised < 5
