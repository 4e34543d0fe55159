"""Round trips and top-level commands per widget action, counted on the wire.

The site runs in this process (Starlette's TestClient, the real app on a
real Valkey, the whole click: guards, body, `server.widgets.runner.act`);
`bench.wire.WireCount` counts what each action sends. Each widget's tour is
walked from a fresh Reset: every `Step`'s `replay` actions, in order, as a
deep link replays them (`Widget.goto`) but one request each, so every action
is counted in the state its tour reaches it in, plus the widget's Reset and
its state read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.testclient import TestClient

from bench.servers import DIVE
from bench.wire import WireCount
from server.app import create_app
from server.sandboxes.sandbox import COOKIE
from server.settings import Settings
from server.widgets import WIDGETS
from server.widgets.base import Widget


@contextmanager
def in_process_site(url: str) -> Iterator[TestClient]:
    # its data directory (the cookie secret) is a temporary one, never the repository's .emqlab/
    with tempfile.TemporaryDirectory(prefix="emqlab-bench-") as data:
        settings = Settings(data_dir=data, rate_limit=0, read_limit=0, address_sandboxes=0)
        with TestClient(create_app(url, settings, cluster=False)) as client:
            yield client

def sandbox_of(client: TestClient) -> str:
    """The sandbox the client's cookie names (read without asking the site:
    a widget's state read would land its scenario before it is counted)."""
    return str(client.app.state.services.cookies.sandbox.parse(client.cookies[COOKIE]))  # type: ignore[attr-defined]

def count(client: TestClient, sandbox: str, method: str, path: str, body: dict[str, Any] | None = None,
          ) -> dict[str, Any]:
    with WireCount(sandbox) as wire:
        answer = client.post(path, json=body or {}) if method == "POST" else client.get(path)
    assert answer.status_code == 200, (path, answer.status_code, answer.text)
    return {"round_trips": wire.round_trips, "commands": wire.commands, "names": wire.names}

def tour_counts(client: TestClient, sandbox: str, widget: Widget) -> list[dict[str, Any]]:
    """The widget's state read (the first one lands the scenario, through
    the real scripts; a page opened later only reads), Reset, then each step
    of its tour, counted."""
    base = f"/api/widgets/{widget.name}"
    rows = [{"action": "state (GET, first view: lands)", **count(client, sandbox, "GET", f"{base}/state")},
            {"action": "state (GET)", **count(client, sandbox, "GET", f"{base}/state")},
            {"action": "reset", **count(client, sandbox, "POST", f"{base}/reset")}]
    for step in widget.tour:
        for slug, body in step.replay:
            rows.append({"action": slug, "step": step.id,
                         **count(client, sandbox, "POST", f"{base}/{slug}", body)})
    return rows

def dive_of(client: TestClient, name: str) -> str:
    """The first dive of the course that places the widget (its page sets the
    sandbox cookie); the fan-in's dive for a widget no dive places yet (any
    page names the visitor's sandbox)."""
    for page in client.app.state.services.course.dives:  # type: ignore[attr-defined]
        if name in page.widgets:
            return str(page.path)
    return DIVE

def run(url: str) -> dict[str, Any]:
    """Every widget's tour, counted, in the course's order of widgets; and the figures table's "Complete
    child": the fan-in tour's first, right after its Reset (it claims, then completes)."""
    tours: dict[str, Any] = {}
    with in_process_site(url) as client:
        for name, widget in WIDGETS.items():
            client.cookies.clear()  # a fresh visitor per widget: its first view lands the scenario
            client.get(dive_of(client, name))
            tours[name] = tour_counts(client, sandbox_of(client), widget)
    first = next(row for row in tours["fanin"] if row["action"] == "complete-child")
    return {"complete_child": {k: first[k] for k in ("round_trips", "commands", "names")}, "tours": tours}
