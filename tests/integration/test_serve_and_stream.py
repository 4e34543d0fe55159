"""The live stream, against the real site under uvicorn (no test client);
`make serve` itself is tested in tests/integration/ops/test_make_serve.py.

TestClient and ASGITransport buffer whole responses, so the endless SSE stream
is read from the real site under uvicorn.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from server.sandboxes import presence
from server.sandboxes.keys import meta_key
from tests.support import Events, Site, deps, own_site, sandbox_of

DIVE = "/flows/parent-and-children"


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with own_site() as running:
        yield running


def test_an_action_streams_its_effects_and_a_fresh_drawing_to_the_open_page(site: Site) -> None:
    with httpx.Client(base_url=site.url, timeout=10) as client:
        client.get(DIVE)
        assert client.get("/api/widgets/fanin/state").status_code == 200
        with client.stream("GET", "/api/stream", params={"widgets": "fanin"}) as stream:
            events = Events(stream)
            first = [events.next() for _ in range(3)]
            assert [name for name, _ in first] == ["status", "where", "widget"]
            assert first[0][1]["valkey"] == "up"
            assert deps(first[2][1]) == 3
            answer = client.post("/api/widgets/fanin/complete-child")
            assert answer.status_code == 200
            seen = events.until("widget", timeout=5, ver=answer.json()["ver"])
        assert deps(seen[-1][1]) == 2
        # the frame's effects log lists the writes the notifications reported, each in the server's words
        effects = [data for name, data in seen if name == "effect"]
        touched = {e["key"].split("}", 1)[1] for e in effects}
        assert {":job:JOBparent:dependencies", ":job:JOBparent:processed", ":active"} <= touched
        assert {"hset", "zrem", "del"} <= {e["event"] for e in effects}
        words = {e["key"].split("}", 1)[1]: e["words"] for e in effects if e["event"] in ("decr", "hset")}
        assert words[":job:JOBparent:dependencies"] == "one fewer outstanding child"
        assert words[":job:JOBparent:processed"] == "recorded the child's result"


def test_a_stream_without_a_sandbox_cookie_is_refused_with_json(site: Site) -> None:
    answer = httpx.get(site.url + "/api/stream", params={"widgets": "fanin"}, timeout=5)
    assert answer.status_code == 403
    assert "sandbox" in answer.json()["error"]


def test_a_stream_for_an_unknown_widget_is_refused_with_json(site: Site) -> None:
    with httpx.Client(base_url=site.url, timeout=5) as client:
        client.get(DIVE)
        answer = client.get("/api/stream", params={"widgets": "nope"})
    assert answer.status_code == 404
    assert "nope" in answer.json()["error"]


def test_streams_dropped_as_they_open_leave_the_visitor_offline_with_no_page(site: Site) -> None:
    """A page left while its stream opens (a class's learner sent on from the room
    page at once) must not stay counted in: the roster showed such a learner on a
    page she had closed, for as long as her record lived."""
    with httpx.Client(base_url=site.url, timeout=10) as client:
        client.get(DIVE)
        sandbox = sandbox_of(client)
        cookie = "; ".join(f"{name}={value}" for name, value in client.cookies.items())
    address = urlsplit(site.url)
    request = (f"GET /api/stream?widgets=fanin HTTP/1.1\r\nHost: {address.netloc}\r\nCookie: {cookie}\r\n"
               f"Referer: {site.url}{DIVE}\r\nAccept: text/event-stream\r\n\r\n").encode()
    for attempt in range(60):  # each hangs up at another moment of the stream's opening
        with socket.create_connection((address.hostname, address.port)) as sock:
            sock.sendall(request)
            time.sleep(attempt % 6 / 2000)
    r = site.redis()
    deadline = time.monotonic() + 10  # a liveness bound: each stream's end is seen and its entry removed

    def entries() -> dict[str, str]:
        return {k: v for k, v in r.hgetall(meta_key(sandbox)).items() if k.startswith(presence.PREFIX)}

    while entries() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # a stream's first write landing late would show by now
    meta = r.hgetall(meta_key(sandbox))
    assert not entries() and not presence.online(meta) and presence.page(meta) is None, meta
