"""Streams one cookie may hold open are capped (real site, real Valkey): past
the cap a new stream answers 429 in words while the open ones go on; another
visitor is not touched; a closed stream gives its place back; a visitor's few
tabs under the default cap all stream."""

from __future__ import annotations

import time
from contextlib import ExitStack

import httpx

from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import class_site
from tests.support import DIVE, Events, LiveSite

HEADERS = {"Referer": f"http://127.0.0.1{DIVE}"}


def open_stream(stack: ExitStack, client: httpx.Client) -> httpx.Response:
    response = stack.enter_context(client.stream("GET", "/api/stream?widgets=fanin", headers=HEADERS,
                                                 timeout=httpx.Timeout(10, read=15)))
    return response


def reading(response: httpx.Response) -> Events:
    """The stream's events (kept by the caller: a dropped line iterator closes the connection)."""
    return Events(response)


def test_past_the_cap_a_new_stream_answers_429_in_words_and_a_closed_one_gives_its_place_back(
        valkey_server: ValkeyProcess) -> None:
    with class_site(valkey_server.url, {"EMQLAB_STREAMS_PER_VISITOR": "4"}) as site:
        visitor = site.visitor()
        with ExitStack() as tabs:
            opened = [open_stream(tabs, visitor) for _ in range(4)]
            assert [r.status_code for r in opened] == [200] * 4
            readers = [reading(r) for r in opened]
            assert {events.next()[0] for events in readers} == {"status"}  # each stream is live
            with ExitStack() as more:
                refused = open_stream(more, visitor)
                assert refused.status_code == 429
                assert "at most 4 pages of this site may be open at once" in refused.read().decode()
            with ExitStack() as other:  # another visitor streams as ever
                assert open_stream(other, site.visitor()).status_code == 200
            opened[0].close()  # one tab closed: its place comes back once the site sees it go
            deadline = time.monotonic() + 10
            while True:
                with ExitStack() as again:
                    if open_stream(again, visitor).status_code == 200:
                        break
                assert time.monotonic() < deadline, "the closed stream's place did not come back"
                time.sleep(0.2)
        with ExitStack() as tabs:  # every tab closed: all four places back
            assert all(_eventually_200(tabs, visitor) for _ in range(4))


def _eventually_200(stack: ExitStack, client: httpx.Client) -> bool:
    deadline = time.monotonic() + 10
    while (response := open_stream(stack, client)).status_code != 200:
        response.close()
        assert time.monotonic() < deadline, response.read()
        time.sleep(0.2)
    return True


def test_a_visitors_few_tabs_all_stream_under_the_default_cap(clean: LiveSite) -> None:
    visitor = clean.visitor()
    with ExitStack() as tabs:
        opened = [open_stream(tabs, visitor) for _ in range(6)]
        assert [r.status_code for r in opened] == [200] * 6
