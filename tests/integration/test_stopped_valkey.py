"""A Valkey that is stopped, not dead (SIGSTOP), answers nothing at all: a
request still gets its answer, a 503 in words, when its one deadline passes,
and the site works again when Valkey goes on (SIGCONT)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from server.valkey.process import ValkeyProcess
from tests.support import LiveSite, running


@pytest.fixture
def stoppable() -> Iterator[tuple[ValkeyProcess, LiveSite]]:
    with ValkeyProcess() as valkey, running(valkey.url) as site:
        yield valkey, site


def test_a_stopped_valkey_makes_requests_answer_503_in_words_and_a_continued_one_serves_again(
        stoppable: tuple[ValkeyProcess, LiveSite]) -> None:
    valkey, site = stoppable
    client = site.visitor()
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    assert valkey.proc is not None
    os.kill(valkey.proc.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        answer = client.post("/api/widgets/fanin/complete-child", json={}, timeout=30)
        assert answer.status_code == 503 and "Valkey" in answer.json()["error"]
        assert time.monotonic() - started < 20  # a liveness bound: the request's deadline, not a hang
    finally:
        os.kill(valkey.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 15
    while client.post("/api/widgets/fanin/claim", json={}).status_code != 200:
        assert time.monotonic() < deadline, "the site did not serve again after SIGCONT"
        time.sleep(0.2)
