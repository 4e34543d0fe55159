"""Faults behind the site's back, each on a Valkey of its own, the site under uvicorn.

Keyspace notifications switched off where CONFIG is allowed (the heartbeat
notices, switches them on again and every stream resyncs) and where it is
refused (every page is told so in words and the streams follow Valkey by
polling); Valkey out of memory (503s in words, nothing written, the streams
say so, and everything recovers once memory frees); a stream's heartbeats
and its lifetime cap.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from typing import Any

import httpx
import redis

from server.valkey.process import ValkeyProcess
from tests.support import Events, LiveSite, deps, dumped, running, streaming

PAGES = 6
WITHIN = 8.0  # seconds: liveness deadlines (the heartbeat judges silence after 2 s)


def pages_of(site: LiveSite, stack: ExitStack, count: int) -> tuple[httpx.Client, list[Events]]:
    """One visitor with `count` open pages of the fan-in, each past its first snapshot."""
    visitor = site.visitor()
    stack.callback(visitor.close)
    assert visitor.get("/api/widgets/fanin/state").status_code == 200  # landed before any page listens
    pages = []
    for _ in range(count):
        page = stack.enter_context(site.client(cookies=visitor.cookies))
        events = stack.enter_context(streaming(page))
        events.until("widget", widget="fanin")
        pages.append(events)
    return visitor, pages


def test_notifications_switched_off_behind_the_sites_back_are_switched_on_again_and_every_page_resyncs() -> None:
    with ValkeyProcess() as valkey, running(valkey.url) as site, ExitStack() as stack:
        visitor, pages = pages_of(site, stack, PAGES)
        admin = redis.Redis.from_url(valkey.url, decode_responses=True)
        admin.config_set("notify-keyspace-events", "")
        # a click while they are off: no notification of it ever reaches the hub
        assert visitor.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        for events in pages:
            seen = events.until("widget", timeout=WITHIN, widget="fanin", where=lambda d: deps(d) == 2)
            assert any(kind == "status" and "switched them on again" in data.get("message", "")
                       for kind, data in seen)
        assert "K" in str(admin.config_get("notify-keyspace-events")["notify-keyspace-events"])
        with streaming(stack.enter_context(site.client(cookies=visitor.cookies))) as fresh:
            kind, status = fresh.next()
            assert kind == "status" and status["notifications"] is True and status["message"] == ""


def test_notifications_off_where_config_is_refused_are_said_plainly_and_the_streams_follow_by_polling() -> None:
    locked = ValkeyProcess(extra_args=("--rename-command", "CONFIG", "ADMINCONFIG"))
    with locked as valkey, running(valkey.url) as site, ExitStack() as stack:
        visitor, pages = pages_of(site, stack, 3)
        admin: Any = redis.Redis.from_url(valkey.url, decode_responses=True)
        admin.execute_command("ADMINCONFIG", "SET", "notify-keyspace-events", "")
        for events in pages:
            said = events.until("status", timeout=WITHIN, notifications=False)[-1][1]
            assert "may not switch them on" in said["message"] and "1.5 s" in said["message"]
        assert visitor.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        for events in pages:  # no notification: the next poll paints it
            events.until("widget", timeout=WITHIN, widget="fanin", where=lambda d: deps(d) == 2)
        with streaming(stack.enter_context(site.client(cookies=visitor.cookies))) as fresh:
            kind, status = fresh.next()
            assert kind == "status" and status["notifications"] is False
        admin.execute_command("ADMINCONFIG", "SET", "notify-keyspace-events", "KA")
        pages[0].until("status", timeout=WITHIN, notifications=True)


def fill(valkey: ValkeyProcess) -> redis.Redis:
    """Valkey past its maxmemory: a 4 MB key, then a limit at half of what it uses."""
    admin = redis.Redis.from_url(valkey.url, decode_responses=True)
    admin.set("fill", "x" * 4_000_000)
    used = int(admin.info("memory")["used_memory"])
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", str(used // 2))
    return admin


def test_out_of_memory_answers_503_in_words_writes_nothing_and_everything_recovers_when_memory_frees() -> None:
    with ValkeyProcess() as valkey, running(valkey.url) as site, ExitStack() as stack:
        visitor, (page,) = pages_of(site, stack, 1)
        newcomer = site.visitor("/")  # a page with no widget: its first paint lands nothing
        stack.callback(newcomer.close)
        admin = fill(valkey)
        before = dumped(admin, "emq:*")
        answers = {
            "action": visitor.post("/api/widgets/fanin/complete-child", json={}),
            "another widget's first action": visitor.post("/api/widgets/native/script", json={}),
            "a new sandbox's first state": newcomer.get("/api/widgets/fanin/state"),
            "console write": visitor.post("/api/console", json={"command": "HSET emq:{fanin}:job:JOBparent note x"}),
        }
        for what, answer in answers.items():
            assert answer.status_code == 503, (what, answer.text)
            assert "memory" in answer.json()["error"], (what, answer.text)
        assert dumped(admin, "emq:*") == before  # nothing was written
        said = page.until("status", timeout=WITHIN, memory="full")[-1][1]
        assert "out of memory" in said["message"]
        with streaming(stack.enter_context(site.client(cookies=newcomer.cookies))) as late:
            late.until("status", timeout=WITHIN, memory="full")

        admin.config_set("maxmemory", "0")
        page.until("status", timeout=WITHIN, memory="ok")
        acted = visitor.post("/api/widgets/fanin/complete-child", json={})
        assert acted.status_code == 200, acted.text
        page.until("widget", timeout=WITHIN, widget="fanin", where=lambda d: deps(d) == 2)
        first = newcomer.get("/api/widgets/fanin/state")  # failed once under a loaded fresh clone: say why
        assert first.status_code == 200, (first.text, first.headers.get("retry-after"))
        line = visitor.post("/api/console", json={"command": "HSET emq:{fanin}:job:JOBparent note x"})
        assert line.status_code == 200, line.text


def test_a_stream_carries_heartbeats_and_ends_at_its_lifetime_cap() -> None:
    env = {"EMQLAB_STREAM_LIFETIME": "5", "EMQLAB_STREAM_PING": "1"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        client = site.visitor()
        started = time.monotonic()
        pings, events = 0, []
        with client.stream("GET", "/api/stream?widgets=fanin", timeout=20) as response:
            for line in response.iter_lines():
                pings += line.startswith(":")
                if line.startswith("event:"):
                    events.append(line.split(":", 1)[1].strip())
        lasted = time.monotonic() - started
        assert 4.5 <= lasted < 15, lasted  # ended by the site, not by the client's timeout
        assert pings >= 2 and events[:3] == ["status", "where", "widget"]


def test_a_page_opened_while_valkey_is_away_says_so_and_paints_by_itself_once_it_is_back() -> None:
    valkey = ValkeyProcess()
    valkey.start()
    try:
        with running(valkey.url) as site:
            client = site.visitor()
            assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
            valkey.stop(remove_dir=False)
            with streaming(client, read_timeout=20) as events:
                events.until("status", timeout=WITHIN, valkey="down")
                valkey.start()
                events.until("status", timeout=WITHIN, valkey="up")
                # the server came back empty: the stream's resync landed the scenario again
                assert deps(events.until("widget", timeout=WITHIN, widget="fanin")[-1][1]) == 3
    finally:
        valkey.stop()
