"""The no-JavaScript traces (server/widgets/traces.py): each widget's tour,
played once on Valkey through the executor, drawn on the dive as rows.

A site that starts while Valkey is away renders its pages without traces,
and the traces arrive once Valkey answers (the cached page bodies dropped,
so the next request draws them); each row is what Valkey held; a question
asked before a step comes with the answer Valkey gave.
"""

from __future__ import annotations

import re
import time

from server.emq.wire import Conn
from server.lifecycle import removal
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS, traces
from tests.support import DIVE, LiveSite
from tests.widgets import catalog, lab

ARRIVE_WITHIN = 20.0  # seconds: the retries back off from 1 s; a liveness deadline


def trace_rows(page: str, widget: str) -> list[str]:
    """The rows of one widget's trace table on a rendered dive."""
    section = page.split(f'data-widget="{widget}"', 1)[1]
    box = section.split('data-role="trace"', 1)[1].split("</details>\n</section>", 1)[0]
    return re.findall(r'<tr data-step="\d+".*?</tr>', box, flags=re.S)


def test_without_valkey_at_start_pages_render_without_traces_and_the_traces_arrive_later() -> None:
    valkey = ValkeyProcess()  # its port chosen, nothing listening on it yet
    site = LiveSite(valkey.url).start()
    try:
        page = site.client().get(DIVE)
        assert page.status_code == 200
        assert "The recorded run is not available yet" in page.text
        assert trace_rows(page.text, "fanin") == []
        valkey.start()
        deadline = time.monotonic() + ARRIVE_WITHIN
        while not trace_rows(page.text, "fanin"):
            assert time.monotonic() < deadline, "the traces did not arrive after Valkey came back"
            time.sleep(0.25)
            page = site.client().get(DIVE)
        assert len(trace_rows(page.text, "fanin")) == sum(len(s.replay) for s in WIDGETS["fanin"].tour) + 1
        assert "The recorded run is not available yet" not in page.text
        assert not site.redis().keys("*strace*"), "the scratch sandbox was removed"
    finally:
        site.stop()
        valkey.stop()


def test_a_question_asked_before_a_step_of_the_trace_comes_with_the_answer_valkey_gave(site: LiveSite) -> None:
    rows = trace_rows(site.client().get(DIVE).text, "fanin")
    asked = [row for row in rows if 'class="trace-question"' in row]
    assert asked, "the fan-in's trace asks its questions"
    for row in asked:
        answer = row.split('class="trace-answer"', 1)[1].split("<p>", 1)[1].split("</p>", 1)[0]
        assert "Valkey" in answer and ":dependencies = " in answer, row


async def test_each_row_of_the_fan_in_trace_is_what_valkey_held_after_that_step(conn: Conn) -> None:
    trace = await traces.record(lab(conn), WIDGETS["fanin"], "strace00000")
    readouts = [row.readout for row in trace.rows]
    assert readouts[0].startswith("0 of 3 children complete → :dependencies = 3")
    counter = [c for c in trace.rows[1].changes if c.key == "job:JOBparent:dependencies"]
    assert counter == [traces.KeyChange("job:JOBparent:dependencies", "changed", "2")]
    redelivered = trace.rows[2]
    assert "complete answered 0 (no row)" in redelivered.outcome and redelivered.changes == ()
    stale = next(row for row in trace.rows if row.label == "Complete with a stale token")
    assert "EMQSTALE" in stale.outcome and stale.changes == ()
    released = next(row for row in trace.rows if ":dependencies = 0" in row.readout)
    assert "the parent is released" in released.readout
    assert not any("strace00000" in row.outcome + row.readout for row in trace.rows)


async def test_recording_every_trace_leaves_no_key_of_its_scratch_sandbox(conn: Conn) -> None:
    found = await traces.record_all(lab(conn), lambda sandbox: removal.delete(conn, catalog(), sandbox))
    assert set(found) == set(WIDGETS)
    for name, trace in found.items():
        assert [row.step for row in trace.rows] == list(range(len(trace.rows))), name
        assert len(trace.rows) == 1 + sum(len(step.replay) for step in WIDGETS[name].tour), name
    assert [k async for k in conn.scan_iter(match="*")] == []
