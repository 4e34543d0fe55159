"""What one learner may cost the others: a snapshot stays small, reads have a budget."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from server.valkey.process import ValkeyProcess
from server.web import guards
from tests.support import LiveSite, running


@pytest.fixture(scope="module")
def limited() -> Iterator[LiveSite]:
    limits = {"EMQLAB_READ_LIMIT": "40", "EMQLAB_RATE_LIMIT": "100"}
    with ValkeyProcess() as valkey, running(valkey.url, limits) as site:
        yield site


def test_a_snapshot_stays_under_64_kb_whatever_the_console_wrote(clean: LiveSite) -> None:
    client = clean.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    big = "x" * 900
    for i in range(0, 600, 4):
        fields = " ".join(f"f{j} {big}" for j in range(i, i + 4))
        answer = client.post("/api/console", json={"command": f"HSET emq:{{fanin}}:job:JOBbig {fields}"})
        assert answer.status_code == 200, answer.text
    state = client.get("/api/widgets/fanin/state")
    assert len(state.content) < 64 * 1024
    keys = {k["name"]: k for q in state.json()["snapshot"]["queues"] for k in q["keys"]}
    assert keys["emq:{fanin}:job:JOBbig"]["size"] == 600 and keys["emq:{fanin}:job:JOBbig"]["cut"]


def test_a_flood_of_reads_from_one_learner_is_refused_and_another_learner_acts(limited: LiveSite) -> None:
    # The budget is 40 reads in each 10-second window of the site's monotonic clock (the
    # machine's, which this process reads too): a flood is counted window by window, so a
    # window that turns during it never reads as a failure, whatever the machine's load.
    flooder, other = limited.visitor(), limited.visitor()
    assert other.get("/api/widgets/fanin/state").status_code == 200
    answered: dict[int, list[int]] = {}
    refused = None
    for _ in range(400):  # until refused: a liveness bound
        window = int(time.monotonic() // guards.WINDOW)
        answer = flooder.get("/api/widgets/fanin/state")
        if int(time.monotonic() // guards.WINDOW) == window:  # begun and answered in one window
            answered.setdefault(window, []).append(answer.status_code)
        if answer.status_code == 429:
            refused = answer
            break
    assert refused is not None and "too many reads" in refused.json()["error"]
    assert all(set(codes) <= {200, 429} and codes.count(200) <= 40 for codes in answered.values()), answered
    assert other.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
