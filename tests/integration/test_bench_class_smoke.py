"""The class benchmark runs for about a second, so it never rots: a few
learners, the class page open, no collision, every action seen on the roster.
It never asserts a time: the figures live in docs/PERFORMANCE.md."""

from __future__ import annotations

from bench import bench_class


def test_the_class_bench_runs_with_no_collision_and_every_action_reaches_the_roster() -> None:
    result = bench_class.run(learners=3, seconds=1.5)
    assert result["collisions"] == 0 and result["tracebacks"] == 0
    assert result["distinct_queues"] == 3
    assert result["actions"] > 0 and result["answers"] == {"200": result["actions"]}
    assert result["actions_seen_on_roster"] == result["actions"]
    assert result["online_at_end"] == 3
    assert result["roster_update_ms"]["samples"] == result["actions"]
