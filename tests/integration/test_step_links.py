"""A deep link's step that names none (`#fanin-step=<text>`) is refused in the link's words (422), whatever
its length, and writes nothing: the page sends the link's text as it stands."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from server.valkey.process import ValkeyProcess
from tests.support import DIVE, SITE_CLOCK, LiveSite, dumped, running


@pytest.fixture(scope="module")
def site(valkey_server: ValkeyProcess) -> Iterator[LiveSite]:
    with running(valkey_server.url) as live:
        yield live


@pytest.mark.parametrize("step", ["x" * 41, "7" * 20 + "-" + "7" * 30, "<b>" * 100])
def test_a_long_step_link_that_names_no_step_is_refused_in_words_and_writes_nothing(site: LiveSite, step: str) -> None:
    learner = site.visitor(DIVE)
    learner.get("/api/widgets/fanin/state")
    before = dumped(site.redis(), skip=("lab:attempts:", *SITE_CLOCK))
    answer = learner.post("/api/widgets/fanin/goto", json={"step": step, "link": "#fanin-step"})
    assert answer.status_code == 422
    assert answer.json()["error"].startswith("#fanin-step=" + step[:40])
    assert "is not a step of this tour (1–8); the widget stays as it is." in answer.json()["error"]
    assert dumped(site.redis(), skip=("lab:attempts:", *SITE_CLOCK)) == before


def test_a_step_past_the_tour_goes_to_its_last_step_whether_sent_as_a_number_or_as_text(site: LiveSite) -> None:
    learner = site.visitor(DIVE)
    for step in (5000, "5000", 2**40):
        answer = learner.post("/api/widgets/fanin/goto", json={"step": step, "link": "#fanin-step"})
        assert answer.status_code == 200, (step, answer.text)
        assert "The tour has 8 steps; here is the last. Step 8 of 8" in answer.json()["outcome"]["text"], step


def test_the_refusal_quotes_the_link_without_the_invisible_marks_that_would_reorder_its_words(site: LiveSite) -> None:
    learner = site.visitor(DIVE)
    answer = learner.post("/api/widgets/fanin/goto", json={"step": "\u202e3pets\u200f\x07", "link": "#fanin-step"})
    assert answer.status_code == 422
    assert answer.json()["error"].startswith("#fanin-step=3pets is not a step of this tour (1–8)")
