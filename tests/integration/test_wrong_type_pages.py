"""A site key of the wrong type (an operator's SET on a hash, a fault) met while drawing a dive page:
a browser gets the site's error page saying what is wrong and what to do, a script keeps its JSON,
and the learner's way out (Start over, or the widget landing again by itself) brings the page back.
The wrong-type keys are set directly in Valkey: no learner reaches them through the console's ACL.
"""

from __future__ import annotations

from pathlib import Path

from server.sandboxes import keys
from server.sandboxes.sandbox import queue_name
from server.valkey.process import ValkeyProcess
from tests.support import DIVE, LiveSite, sandbox_of, streaming

# what a browser's navigation sends
BROWSER = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_a_wrong_type_progress_record_is_said_on_an_html_page_and_start_over_brings_the_dive_back(
        site: LiveSite) -> None:
    client = site.visitor()
    record = keys.progress_key(sandbox_of(client))
    site.redis().set(record, "oops")

    page = client.get(DIVE, headers=BROWSER)
    assert page.status_code == 409
    assert page.headers["content-type"].startswith("text/html")
    assert "holds another type than the site keeps there" in page.text
    assert "the operator must look at the Valkey" in page.text
    assert 'action="/progress/start-over"' in page.text and "<title>This page cannot be shown" in page.text

    api = client.get("/api/widgets/fanin/state")
    assert api.status_code == 409 and api.headers["content-type"].startswith("application/json")
    # what a script is told must be true: Reset does not reach the progress record, Start over does
    assert "Press Reset" in api.json()["error"] and "Start over on /progress" in api.json()["error"]

    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert site.redis().type(record) in ("hash", "none")
    again = client.get(DIVE, headers=BROWSER)
    assert again.status_code == 200 and 'data-widget="fanin"' in again.text


def test_a_widgets_lab_state_of_the_wrong_type_lands_again_when_the_page_shows_it(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200  # landed in this sandbox
    state = keys.state_key(queue_name(sandbox_of(client), "fanin"))
    assert site.redis().type(state) == "hash"
    site.redis().delete(state)
    site.redis().set(state, "oops")

    page = client.get(DIVE, headers=BROWSER)
    assert page.status_code == 200, page.text[:300]
    assert site.redis().type(state) == "hash"
    assert site.redis().hget(state, "landed") == "1"


def test_reset_brings_back_a_widget_whose_lab_state_holds_the_wrong_type(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    state = keys.state_key(queue_name(sandbox_of(client), "fanin"))
    site.redis().delete(state)
    site.redis().rpush(state, "oops")

    reset = client.post("/api/widgets/fanin/reset", json={})
    assert reset.status_code == 200, reset.text
    assert site.redis().type(state) == "hash"
    assert client.get("/api/widgets/fanin/state").json()["snapshot"]["problem"] is None


def test_the_progress_page_says_a_wrong_type_record_is_one_and_its_start_over_brings_the_record_back(
        site: LiveSite) -> None:
    client = site.visitor()
    record = keys.progress_key(sandbox_of(client))
    site.redis().set(record, "oops")

    page = client.get("/progress", headers=BROWSER)
    assert page.status_code == 409, page.text[:300]
    assert page.headers["content-type"].startswith("text/html")
    assert "holds another type than the site keeps there" in page.text  # the dive pages' words
    assert "unreachable" not in page.text  # Valkey answered: saying it did not would be false
    assert 'action="/progress/start-over"' in page.text

    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303, done.text
    again = client.get("/progress", headers=BROWSER)
    assert again.status_code == 200 and "Start over…" in again.text and 'data-progress-of="fanin"' in again.text
    assert client.get(DIVE, headers=BROWSER).status_code == 200


def test_the_index_and_hub_pages_say_a_wrong_type_progress_record_and_offer_start_over_instead_of_hiding_it(
        site: LiveSite) -> None:
    client = site.visitor()
    record = keys.progress_key(sandbox_of(client))
    site.redis().set(record, "oops")

    for path in ("/", "/flows", "/batches"):
        page = client.get(path, headers=BROWSER)
        assert page.status_code == 409, (path, page.text[:300])
        assert "holds another type than the site keeps there" in page.text  # the dive pages' and stream's words
        assert 'action="/progress/start-over"' in page.text and 'data-role="start-over"' in page.text
    assert client.get("/", headers={"accept": "application/json"}).status_code == 409  # a script: its JSON

    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303, done.text
    for path in ("/", "/flows", "/batches"):
        again = client.get(path, headers=BROWSER)
        assert again.status_code == 200 and 'data-role="dive-progress-summary"' in again.text, path


def test_a_stream_whose_progress_record_holds_the_wrong_type_says_so_without_a_traceback(tmp_path: Path) -> None:
    log = tmp_path / "site.log"
    with ValkeyProcess() as valkey, log.open("wb") as sink:
        site = LiveSite(valkey.url)
        site.start(output=sink)
        try:
            client = site.visitor()
            assert client.get("/api/widgets/fanin/state").status_code == 200  # landed before the fault
            site.redis().set(keys.progress_key(sandbox_of(client)), "oops")
            for _ in range(2):  # each open says it, and logs nothing
                with streaming(client) as events:
                    said = events.until("status", where=lambda d: "holds another type" in d.get("message", ""))
                    assert "Start over" in said[-1][1]["message"]
            with streaming(client) as events:  # nor does a change of its widget, heard while the page is open
                events.until("status", where=lambda d: "holds another type" in d.get("message", ""))
                line = client.post("/api/console", json={"command": "SET emq:{fanin}:job:JOBparent:dependencies 9"})
                assert line.status_code == 200, line.text
                events.until("status", where=lambda d: "holds another type" in d.get("message", ""))
        finally:
            site.stop()
    text = log.read_text()
    assert "Traceback" not in text and "WRONGTYPE" not in text, text[-2000:]


def test_a_scripts_own_wrong_type_refusal_is_answered_as_a_wrong_type_and_reset_brings_the_widget_back(
        site: LiveSite) -> None:
    # The EchoMQ scripts check a key's type before they write (EMQTYPE ... but it holds a string): the same
    # fault as Valkey's WRONGTYPE (an operator's command), said in the same words, never a 500
    from server.emq.keyspace import queue_key
    from server.widgets.ledger_batch import sample_batch

    client = site.visitor("/batches/bulk-flows")
    assert client.get("/api/widgets/ledger/state").status_code == 200
    row = queue_key(queue_name(sandbox_of(client), "ledger.orders"), "job:JOBmine1")
    site.redis().set(row, "oops")

    mine = client.post("/api/widgets/ledger/own-batch", json={"flows": sample_batch()})
    assert mine.status_code == 409, mine.text
    assert "Press Reset" in mine.json()["error"]
    assert client.get("/api/widgets/ledger/state").status_code == 200

    assert client.post("/api/widgets/ledger/reset", json={}).status_code == 200
    again = client.post("/api/widgets/ledger/own-batch", json={"flows": sample_batch()})
    assert again.status_code == 200, again.text
    assert site.redis().type(row) == "hash"
