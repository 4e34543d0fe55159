"""What the benchmarks replay as a learner's clicks, and how they read a frame
(no server: the widget's declared tour and a frame's text are enough)."""

from __future__ import annotations

from bench import probe
from bench.probe import dependencies_of, ver_of
from server.widgets import WIDGETS


def test_the_walk_is_a_reset_then_every_action_the_fanin_tour_replays_in_order() -> None:
    replayed = [slug for step in WIDGETS["fanin"].tour for slug, _ in step.replay]
    assert ("reset", *replayed) == probe.WALK
    assert set(probe.WALK) <= set(WIDGETS["fanin"].actions)


def test_the_mix_is_described_by_its_share_of_resets() -> None:
    assert probe.describe(("reset", "claim", "reset", "late")) .endswith("2 resets in 4")
    assert probe.describe(("reset", "claim")).endswith("1 reset in 2")


def test_an_html_frame_is_read_for_its_version_and_the_fanin_counter() -> None:
    frame = '<section data-widget="fanin" data-ver="12"><b data-role="dependencies">2</b></section>'
    assert ver_of(frame) == 12 and ver_of('{"widget": "fanin", "ver": 7}') == 7
    assert dependencies_of(frame) == 2
    assert dependencies_of(frame.replace("fanin", "native")) is None
