"""One click's cost on the wire: round trips and commands (they do not drift with machine noise).

The README's "How one click travels" and docs/ARCHITECTURE.md state these figures.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from bench.wire import WireCount
from server.app import create_app
from server.sandboxes.sandbox import SPECIMEN
from server.settings import Settings
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS

DIVE = "/flows/parent-and-children"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with ValkeyProcess() as valkey:
        settings = Settings(data_dir=str(tmp_path_factory.mktemp("data")), rate_limit=0, read_limit=0)
        with TestClient(create_app(valkey.url, settings, cluster=False)) as client:
            assert client.get(DIVE).status_code == 200
            yield client


def sandbox_of(client: TestClient) -> str:
    snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
    assert snap["landed"]
    return str(client.app.state.services.cookies.sandbox.parse(client.cookies["emqlab_sandbox"]))  # type: ignore[attr-defined]


def test_complete_child_is_four_round_trips_and_eight_commands(client: TestClient) -> None:
    sandbox = sandbox_of(client)
    # once, so Valkey's script cache holds complete.lua, as on any site after its first completion
    client.post("/api/widgets/fanin/complete-child", json={})
    client.post("/api/widgets/fanin/reset", json={})
    with WireCount(sandbox) as wire:
        answer = client.post("/api/widgets/fanin/complete-child", json={})
    assert answer.status_code == 200, answer.text
    # the lock with the read; claim; complete; the finish with the records
    assert wire.round_trips == 4, wire.names
    assert wire.commands == 8, wire.names
    assert wire.names.count("EVALSHA") == 6 and wire.names.count("SET") == 1 and wire.names.count("DEL") == 1


def complete_the_last_child(client: TestClient, sandbox: str, body: dict[str, object]) -> WireCount:
    """Reset, complete two children, then count the third: the completion that releases the parent."""
    client.post("/api/widgets/fanin/reset", json={})
    for _ in range(2):
        assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    with WireCount(sandbox) as wire:
        answer = client.post("/api/widgets/fanin/complete-child", json=body)
    assert answer.status_code == 200, answer.text
    assert "released" in answer.json()["outcome"]["reached"]
    return wire


def test_the_last_child_that_releases_the_parent_is_four_round_trips_and_eight_commands(client: TestClient) -> None:
    wire = complete_the_last_child(client, sandbox_of(client), {})
    assert wire.round_trips == 4, wire.names
    assert wire.commands == 8, wire.names


def test_a_prediction_on_the_last_child_adds_at_most_one_round_trip(client: TestClient) -> None:
    sandbox = sandbox_of(client)
    predict = {"predict": {"question": "deps-after-complete", "answer": 0}}
    wire = complete_the_last_child(client, sandbox, predict)
    answer = client.get("/api/widgets/fanin/state").json()["snapshot"]["outcome"]
    assert answer["verdict"]["right"] is True, answer
    # the verdict's fresh read: one round trip more, carrying the lab state and :logs writes with it
    assert wire.round_trips == 5, wire.names
    assert wire.commands == 10, wire.names


def test_a_page_reading_a_landed_widget_costs_one_round_trip(client: TestClient) -> None:
    sandbox = sandbox_of(client)
    with WireCount(sandbox) as wire:
        assert client.get("/api/widgets/fanin/state").status_code == 200
    assert wire.round_trips == 1 and wire.commands == 2, wire.names


def test_a_dive_page_reads_all_its_widgets_in_one_round_trip(client: TestClient) -> None:
    sandbox = sandbox_of(client)
    assert client.get(DIVE).status_code == 200  # every widget of the dive landed
    with WireCount(sandbox) as wire:
        page = client.get(DIVE)
    assert page.status_code == 200
    placed = [w for w in WIDGETS.values() if f'data-widget="{w.name}"' in page.text]
    assert len(placed) >= 3, placed
    # one round trip for every widget's queues and the sandbox's record, one for the course's progress
    assert wire.round_trips == 2, wire.names
    assert wire.names.count("EVALSHA") == sum(len(w.queue_parts) for w in placed), wire.names
    assert wire.names.count("HGETALL") == 2, wire.names


def fanin_section(client: TestClient) -> str:
    page = client.get(DIVE).text
    return page[page.index('data-widget="fanin"'):page.index("</section>", page.index('data-widget="fanin"'))]


def test_a_drawing_kept_is_never_stale(client: TestClient) -> None:
    sandbox_of(client)
    client.post("/api/widgets/fanin/reset", json={})
    before = fanin_section(client)
    assert fanin_section(client) == before  # the same snapshot: the same drawing
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 200
    after = fanin_section(client)
    assert after != before  # the claim's snapshot, read for this request, drawn afresh
    assert int(after.split('data-ver="')[1].split('"')[0]) > int(before.split('data-ver="')[1].split('"')[0])


def test_a_first_visit_reads_the_specimen_in_one_round_trip(client: TestClient) -> None:
    kept = client.cookies["emqlab_sandbox"]
    try:
        client.cookies.clear()
        assert client.get(DIVE).status_code == 200  # the specimen landed
        client.cookies.clear()  # a first visit again
        with WireCount(SPECIMEN) as wire:
            page = client.get(DIVE)
    finally:
        client.cookies.clear()
        client.cookies.set("emqlab_sandbox", kept)
    assert page.status_code == 200 and 'data-widget="fanin"' in page.text
    assert wire.round_trips == 1, wire.names


def test_the_answer_carries_the_outcome_and_no_snapshot(client: TestClient) -> None:
    sandbox_of(client)
    answer = client.post("/api/widgets/fanin/claim", json={}).json()
    assert set(answer) >= {"outcome", "ver", "progress"}
    assert "snapshot" not in answer  # every page, this one included, paints the stream's snapshot
