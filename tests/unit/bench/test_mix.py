"""What the benchmarks replay as a learner's clicks, and how they read a frame
(no server: the widget's declared tour and a frame's text are enough)."""

from __future__ import annotations

from bench import mix
from bench.rawhttp import dependencies_of
from server.widgets import WIDGETS


def test_the_walk_is_a_reset_then_every_action_the_fanin_tour_replays_in_order() -> None:
    replayed = [slug for step in WIDGETS["fanin"].tour for slug, _ in step.replay]
    assert ("reset", *replayed) == mix.WALK
    assert set(mix.WALK) <= set(WIDGETS["fanin"].actions)


def test_the_mix_is_described_by_its_share_of_resets() -> None:
    assert mix.describe(("reset", "claim", "reset", "late")) .endswith("2 resets in 4")
    assert mix.describe(("reset", "claim")).endswith("1 reset in 2")


def test_a_frame_of_another_widget_is_not_read_as_the_fanin_counter() -> None:
    counter = '<output class="counter-value" data-role="dependencies">{}</output>'
    fanin = f'<section class="widget" data-widget="fanin" data-ver="7">{counter.format(2)}</section>'
    other = f'<section class="widget" data-widget="native" data-ver="7">{counter.format(9)}</section>'
    assert dependencies_of(fanin) == 2
    assert dependencies_of(other) is None
    assert dependencies_of("not a widget") is None
