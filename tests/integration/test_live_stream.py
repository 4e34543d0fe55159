"""The live stream on the real site (uvicorn) and a real Valkey: one paint path for every page."""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support import DIVE, Events, LiveSite


@pytest.fixture
def visitor(clean: LiveSite) -> Iterator[httpx.Client]:
    client = clean.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    yield client
    client.close()


def open_stream(client: httpx.Client, widgets: str = "fanin") -> tuple[Any, Events]:
    referer = str(client.base_url.join(DIVE))
    context = client.stream("GET", f"/api/stream?widgets={widgets}", headers={"Referer": referer},
                            timeout=httpx.Timeout(10, read=15))
    response = context.__enter__()
    assert response.status_code == 200
    events = Events(response)
    events.until("widget", widget="fanin")  # the fresh snapshot every (re)connect starts with
    return context, events


def test_two_pages_of_one_sandbox_get_the_same_snapshot_after_a_click(visitor: httpx.Client) -> None:
    first, a = open_stream(visitor)
    second, b = open_stream(visitor)
    try:
        acted = visitor.post("/api/widgets/fanin/complete-child", json={}).json()
        snap_a = a.until("widget", widget="fanin", ver=acted["ver"])[-1][1]
        snap_b = b.until("widget", widget="fanin", ver=acted["ver"])[-1][1]
        assert snap_a == snap_b  # the same HTML to both pages
        assert "1 of 3 children complete → :dependencies = 2" in snap_a["html"]
        assert html.escape(acted["outcome"]["text"], quote=False) in snap_a["html"]
    finally:
        first.__exit__(None, None, None)
        second.__exit__(None, None, None)


def test_the_effects_of_a_click_reach_the_page_with_the_words_of_each_write(visitor: httpx.Client) -> None:
    context, events = open_stream(visitor)
    try:
        acted = visitor.post("/api/widgets/fanin/complete-child", json={}).json()
        seen = events.until("widget", widget="fanin", ver=acted["ver"])
        effects = [data for kind, data in seen if kind == "effect"]
        words = {e["words"] for e in effects}
        assert "one fewer outstanding child" in words
        assert all(e["key"].startswith("emq:{fanin}:") for e in effects)  # no sandbox prefix on the page
    finally:
        context.__exit__(None, None, None)


def test_a_console_write_repaints_the_widget_on_the_open_page(visitor: httpx.Client) -> None:
    context, events = open_stream(visitor)
    try:
        line = visitor.post("/api/console", json={"command": "SET emq:{fanin}:job:JOBparent:dependencies 9"})
        assert line.status_code == 200, line.text
        seen = events.until("widget", widget="fanin")
        assert ":dependencies = 9" in seen[-1][1]["html"]
    finally:
        context.__exit__(None, None, None)


def test_the_hub_listens_with_two_patterns_however_many_pages_are_open(clean: LiveSite) -> None:
    valkey = clean.redis()
    assert valkey.execute_command("PUBSUB", "NUMPAT") == 2
    clients = [clean.visitor() for _ in range(12)]
    streams: list[Any] = []
    try:
        for client in clients:
            streams.append(open_stream(client)[0])
        assert valkey.execute_command("PUBSUB", "NUMPAT") == 2
    finally:
        for context in streams:
            context.__exit__(None, None, None)
        for client in clients:
            client.close()


def test_a_page_never_gets_a_snapshot_older_than_one_it_already_got(visitor: httpx.Client) -> None:
    context, events = open_stream(visitor)
    try:
        done = threading.Event()

        def clicks() -> None:
            for _ in range(8):
                visitor.post("/api/widgets/fanin/claim" if _ % 2 else "/api/widgets/fanin/reset", json={})
            done.set()

        worker = threading.Thread(target=clicks)
        worker.start()
        worker.join(30)
        last = visitor.post("/api/widgets/fanin/claim", json={}).json()["ver"]
        seen = events.until("widget", widget="fanin", ver=last)
        vers = [data["ver"] for kind, data in seen if kind == "widget"]
        assert vers == sorted(vers)
    finally:
        context.__exit__(None, None, None)


def test_completing_a_job_that_has_logs_repaints_each_page_once(clean: LiveSite, visitor: httpx.Client) -> None:
    """The DEL of a completed job's `:logs` rides the action's finish under its lock: one batch, one snapshot."""
    from tests.support import sandbox_of

    queue = f"{sandbox_of(visitor)}.fanin"
    with clean.redis() as r:
        for child in ("JOBchild1", "JOBchild2", "JOBchild3"):
            r.rpush(f"emq:{{{queue}}}:job:{child}:logs", "a line the child logged")
    context, events = open_stream(visitor)
    try:
        done = visitor.post("/api/widgets/fanin/complete-child", json={}).json()
        events.until("widget", widget="fanin", ver=done["ver"])
        time.sleep(0.3)  # a second batch (the DEL after the lock) would close well within this
        marker = visitor.post("/api/widgets/fanin/claim", json={})
        assert marker.status_code == 200, marker.text
        between = events.until("widget", widget="fanin", ver=marker.json()["ver"])
        assert [kind for kind, _ in between].count("widget") == 1, [(k, d.get("ver")) for k, d in between]
        with clean.redis() as r:
            assert sum(r.exists(f"emq:{{{queue}}}:job:{c}:logs") for c in ("JOBchild1", "JOBchild2", "JOBchild3")) == 2
    finally:
        context.__exit__(None, None, None)
