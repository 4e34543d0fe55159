"""Staying up while valkey-server goes away and comes back, and while its
script cache is flushed, with the site under uvicorn and no restart of it.

While Valkey is away every action and state read answers 503 in words and
pages still render; once it is back the next action succeeds (the scenario
lands again on the empty server), the console's Valkey user is made again,
keyspace notifications are switched on again and open streams resync.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from server.valkey.process import ValkeyProcess
from tests.support import DIVE, Events, LiveSite, deps, running, streaming

BACK_WITHIN = 10.0  # seconds: a liveness deadline, not a speed


@pytest.fixture
def valkey_server() -> Iterator[ValkeyProcess]:
    server = ValkeyProcess()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def site(valkey_server: ValkeyProcess) -> Iterator[LiveSite]:
    with running(valkey_server.url, {"EMQLAB_STREAM_PING": "1"}) as live:
        yield live


def test_actions_answer_503_in_words_while_valkey_is_down_and_succeed_again_once_it_is_back(
    site: LiveSite, valkey_server: ValkeyProcess
) -> None:
    client = site.visitor()
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200

    valkey_server.stop(remove_dir=False)
    for answer in (client.post("/api/widgets/fanin/complete-child", json={}),
                   client.post("/api/widgets/native/script", json={}),
                   client.get("/api/widgets/fanin/state"),
                   client.post("/api/console", json={"command": "PING"})):
        assert answer.status_code == 503, answer.text
        assert "Valkey is unreachable" in answer.json()["error"]
        assert answer.headers.get("retry-after")
    page = client.get(DIVE)
    assert page.status_code == 200 and 'data-widget="fanin"' in page.text  # pages render without Valkey

    valkey_server.start()
    back = time.monotonic()
    while (answer := client.post("/api/widgets/fanin/complete-child", json={})).status_code != 200:
        assert answer.status_code == 503, answer.text
        assert time.monotonic() - back < BACK_WITHIN, "no success after Valkey came back"
        time.sleep(0.1)
    # the restarted server had lost everything: the scenario landed again, then one child completed
    assert deps(client.get("/api/widgets/fanin/state").json()["snapshot"]) == 2
    # a restarted Valkey forgets ACL users: the console's is made again when it is next needed
    line = client.post("/api/console", json={"command": "GET emq:{fanin}:job:JOBparent:dependencies"})
    assert line.status_code == 200 and line.json()["reply_lines"] == ['"2"'], line.text


def test_after_a_script_flush_the_next_action_and_console_line_run_the_scripts_again(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    valkey = site.redis()
    for action, expected in (("complete-child", 2), ("reset", 3)):
        valkey.script_flush()
        answer = client.post(f"/api/widgets/fanin/{action}", json={})
        assert answer.status_code == 200, answer.text
        assert deps(client.get("/api/widgets/fanin/state").json()["snapshot"]) == expected
    valkey.script_flush()
    claim = "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000"
    line = client.post("/api/console", json={"command": claim})
    assert line.status_code == 200 and line.json()["reply_lines"] == ['1) "JOBchild1"', "2) (integer) 1"], line.text


def test_a_stream_says_valkey_is_down_then_up_and_resyncs_after_notifications_are_switched_on_again(
    site: LiveSite, valkey_server: ValkeyProcess
) -> None:
    client = site.visitor()
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    with streaming(client, read_timeout=20) as events:
        assert deps(events.until("widget", widget="fanin")[-1][1]) == 2

        valkey_server.stop(remove_dir=False)
        events.until("status", valkey="down")
        # it comes back with notifications off, as an external server restarted with its defaults would
        valkey_server.extra_args = ("--notify-keyspace-events", "")
        valkey_server.start()
        events.until("status", valkey="up")
        assert deps(events.until("widget", widget="fanin")[-1][1]) == 3  # landed again on the empty server

        assert "K" in str(site.redis().config_get("notify-keyspace-events")["notify-keyspace-events"])
        acted = client.post("/api/widgets/fanin/complete-child", json={}).json()
        seen = events.until("widget", widget="fanin", ver=acted["ver"])
        assert "one fewer outstanding child" in {data.get("words") for kind, data in seen if kind == "effect"}
        assert deps(seen[-1][1]) == 2


def test_a_reconnecting_stream_starts_from_valkeys_status_and_a_fresh_snapshot_whatever_it_last_saw(
    site: LiveSite,
) -> None:
    client = site.visitor()
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    with client.stream("GET", "/api/stream?widgets=fanin", headers={"Last-Event-ID": "999"}) as response:
        got = Events(response).until("widget", widget="fanin")
        assert got[0][0] == "status" and got[0][1]["valkey"] == "up"
        assert deps(got[-1][1]) == 2
