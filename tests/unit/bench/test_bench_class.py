"""The class benchmark's report section, without running it: spliced into the
report once, keeping the rest."""

from __future__ import annotations

from bench import bench_class


def test_the_class_section_is_spliced_into_the_report_once_keeping_the_rest() -> None:
    result = {"learners": 2, "seconds": 1.0, "actions": 4, "answers": {"200": 4}, "actions_per_second": 4.0,
              "action_ms": {"p50": 1, "p99": 2, "max": 3, "samples": 4},
              "roster_update_ms": {"p50": 1, "p99": 2, "max": 3, "samples": 4},
              "roster_events": 3, "online_at_end": 2, "collisions": 0, "distinct_queues": 2, "tracebacks": 0}
    section = bench_class.render(result)
    report = "# Performance\n\n## Bulk flows\n\nx\n\n## Notes on the targets\n\ny\n"
    once = bench_class.splice(report, section)
    assert once.index("## Bulk flows") < once.index(bench_class.HEADING) < once.index("## Notes on the targets")
    assert bench_class.splice(once, section) == once
