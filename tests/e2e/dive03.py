"""What the dive 03 browser tests share: the page's own sandbox and its queues.

A snapshot names keys and queues as a learner writes them, without the
sandbox id, and the cookie that carries the id is signed. A value still
holds it: the failure-policy widget's cross-queue child records its parent's
full queue name (`<sandbox>.failure-policy`) in its row. Reading that row
through the page's own request context (same cookie) gives the id, so a test
can read the very keys the page shows straight from Valkey.
"""

from __future__ import annotations

import time

from playwright.sync_api import Page


def sandbox_of(page: Page, wait: float = 10.0) -> str:
    # A page's own first read may be landing the scenario right now (the
    # state says "landed" from the moment its keys were cleared), so the row
    # is looked for until it is there: a liveness bound, not a speed.
    deadline = time.monotonic() + wait
    while True:
        answer = page.request.get("/api/widgets/failure-policy/state")
        assert answer.ok, answer.text()
        for queue in answer.json()["snapshot"]["queues"]:
            for key in queue["keys"]:
                if key["name"].endswith(":job:JOBremote"):
                    return str(key["value"]["parent_queue"]).partition(".")[0]
        if time.monotonic() > deadline:
            raise AssertionError("the failure-policy widget holds no JOBremote row to read the sandbox from")
        time.sleep(0.05)


def queue(page: Page, part: str) -> str:
    """A queue of the page's sandbox, as Valkey names it: `<sandbox>.<part>`."""
    return f"{sandbox_of(page)}.{part}"
