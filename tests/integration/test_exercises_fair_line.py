"""The grader line is shared fairly by address: forty cookies behind one address sending
runaway scripts hold their share of it, and a learner from another address still gets
every run graded (issue 38: 29 of that learner's 30 runs were refused).

The site runs with its default grader settings (2 graders, a line of 32, 16 places per
address, 2 runs per sandbox); the rate limits of actions are off (LiveSite's default),
so what refuses a run here is the grader line alone.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from server.emq import registry
from server.valkey.process import ValkeyProcess
from tests.support import DIVE, LiveSite, running

ATTACKER = "127.0.0.2"
LEARNER = "127.0.0.3"
COOKIES = 40
SHARE = "Runs from your network already hold 16 places in the line for a grader"


@pytest.fixture(scope="module")
def site(valkey_server: ValkeyProcess) -> Iterator[LiveSite]:
    with running(valkey_server.url) as live:
        yield live


def visitor_from(site: LiveSite, address: str) -> httpx.Client:
    client = site.client_from(address)
    client.timeout = httpx.Timeout(60)
    assert client.get(DIVE).status_code == 200  # its cookie
    return client


def test_forty_cookies_of_one_address_cannot_hold_the_line_another_address_gets_every_run(site: LiveSite) -> None:
    attackers = [visitor_from(site, ATTACKER) for _ in range(COOKIES)]
    learner = visitor_from(site, LEARNER)
    stop = threading.Event()
    refused: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    lock = threading.Lock()

    def flood(client: httpx.Client) -> None:
        while not stop.is_set():
            answer = client.post("/api/exercises/fan-in/run", json={"script": "while true do end"})
            with lock:
                statuses[answer.status_code] += 1
                if answer.status_code == 429:
                    refused[answer.json()["error"][:len(SHARE)]] += 1
            if answer.status_code == 429:
                time.sleep(0.05)

    with ThreadPoolExecutor(COOKIES * 2) as threads:  # two runs in flight per cookie, its own share
        for client in attackers:
            threads.submit(flood, client)
            threads.submit(flood, client)
        deadline = time.monotonic() + 20  # liveness: until the attacker has met its share
        while refused[SHARE] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert refused[SHARE] > 0, (statuses, refused)

        answers = [learner.post("/api/exercises/fan-in/run", json={"script": registry.script_source("complete")})
                   for _ in range(5)]
        stop.set()
    assert [a.status_code for a in answers] == [200] * 5, [(a.status_code, a.text) for a in answers
                                                           if a.status_code != 200]
    failed = [[check["said"] for check in a.json()["checks"] if not check["passed"]] for a in answers]
    assert failed == [[]] * 5, failed
    # the attacker's runs that were taken were graded (stopped in words), the rest refused with its
    # share; a run whose grader went away under it is a 503 (the API's word for it), never a 500
    assert statuses[200] > 0 and set(statuses) <= {200, 429, 503}, statuses
    for client in (*attackers, learner):
        client.close()
