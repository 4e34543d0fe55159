"""Staying up: valkey-server stops mid-session and starts again, and its
script cache is flushed — the site (under uvicorn) answers 503 while Valkey is
away, succeeds again within 5 s of its return without a restart of the site,
re-enables keyspace notifications, and resyncs open streams."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from server.valkey.process import ValkeyProcess
from tests.support import Events, LiveSite, running


class SwitchableValkey(ValkeyProcess):
    """A managed valkey-server that can come back with notifications off,
    as an external server restarted with its default config would."""

    notifications = True

    def command(self) -> list[str]:
        cmd = super().command()
        if not self.notifications:
            at = cmd.index("--notify-keyspace-events")
            cmd[at + 1] = ""
        return cmd


@pytest.fixture
def valkey_server() -> Iterator[SwitchableValkey]:
    server = SwitchableValkey()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def site(valkey_server: SwitchableValkey) -> Iterator[LiveSite]:
    with running(valkey_server.url, {"EMQLAB_STREAM_PING": "1"}) as live:
        yield live


def dependencies(answer: httpx.Response) -> int:
    return answer.json()["snapshot"]["picture"]["parent"]["dependencies"]


def test_actions_answer_503_while_valkey_is_down_and_succeed_within_5_s_of_its_return(
    site: LiveSite, valkey_server: SwitchableValkey
) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    assert client.post("/api/widgets/fanin/complete-child").status_code == 200

    valkey_server.stop(remove_dir=False)
    for _ in range(2):
        down = client.post("/api/widgets/fanin/complete-child")
        assert down.status_code == 503
        assert "Valkey is unreachable" in down.json()["error"]
        assert down.headers.get("retry-after")
    assert client.get("/api/widgets/fanin/state").status_code == 503
    assert client.get("/flows/parent-and-children").status_code == 200  # pages still render

    valkey_server.start()
    back = time.monotonic()
    while True:
        answer = client.post("/api/widgets/fanin/complete-child")
        if answer.status_code == 200:
            break
        assert answer.status_code == 503, answer.text
        assert time.monotonic() - back < 5, "no success within 5 s of Valkey's return"
        time.sleep(0.1)
    assert time.monotonic() - back < 5
    # The restarted server had lost everything: the scenario landed again first.
    assert dependencies(answer) == 2


def test_after_script_flush_the_next_action_succeeds(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    r = site.redis()
    r.script_flush()
    assert r.script_exists("0" * 40) == [False]
    first = client.post("/api/widgets/fanin/complete-child")
    assert first.status_code == 200, first.text
    assert dependencies(first) == 2
    r.script_flush()
    reset = client.post("/api/widgets/fanin/reset")
    assert reset.status_code == 200, reset.text
    assert dependencies(reset) == 3


def test_the_stream_reports_down_then_up_re_enables_notifications_and_resends_a_snapshot(
    site: LiveSite, valkey_server: SwitchableValkey
) -> None:
    client = site.visitor()
    assert client.post("/api/widgets/fanin/complete-child").status_code == 200
    with client.stream("GET", "/api/stream?widgets=fanin", timeout=20) as response:
        events = Events(response)
        assert events.until("snapshot")[-1][1]["picture"]["parent"]["dependencies"] == 2

        valkey_server.stop(remove_dir=False)
        events.until("status", valkey="down")
        valkey_server.notifications = False  # it comes back with notifications off
        valkey_server.start()
        events.until("status", valkey="up")
        snapshot = events.until("snapshot")[-1][1]
        assert snapshot["picture"]["parent"]["dependencies"] == 3  # landed again on the empty server

        flags = site.redis().config_get("notify-keyspace-events")["notify-keyspace-events"]
        assert "K" in flags  # the site turned them on again
        assert client.post("/api/widgets/fanin/complete-child").status_code == 200
        effect = events.until("effect")[-1][1]
        assert effect["widget"] == "fanin"
        later = events.until("snapshot")[-1][1]
        assert later["picture"]["parent"]["dependencies"] in (2, 3)


def test_a_reconnecting_stream_starts_from_a_fresh_snapshot_whatever_its_last_event_id(site: LiveSite) -> None:
    client = site.visitor()
    client.post("/api/widgets/fanin/complete-child")
    with client.stream("GET", "/api/stream?widgets=fanin", headers={"Last-Event-ID": "999"}) as response:
        events = Events(response)
        got = events.until("snapshot")
        assert got[0][0] == "status"
        assert got[-1][1]["picture"]["parent"]["dependencies"] == 2


def test_a_stream_ends_at_its_lifetime_cap_and_carries_heartbeats(valkey_server: SwitchableValkey) -> None:
    with running(valkey_server.url, {"EMQLAB_STREAM_LIFETIME": "5", "EMQLAB_STREAM_PING": "1"}) as site:
        client = site.visitor()
        started = time.monotonic()
        pings = 0
        with client.stream("GET", "/api/stream?widgets=fanin", timeout=20) as response:
            for line in response.iter_lines():
                if line.startswith(":"):
                    pings += 1
        assert 4 <= time.monotonic() - started < 15
        assert pings >= 2
