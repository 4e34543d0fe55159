"""The performance report lays out every figure it is given (no benchmark run):
one figures table, the learners level by level, the commands per action, then
the details; each target judged met or missed from the figures alone."""

from __future__ import annotations

from typing import Any

from bench import bench_learners, report

DIST = {"p50": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0, "mean": 1.0, "samples": 3}
WRK = {"requests": 10, "seconds": 1.0, "rps": 10.0, "errors": {"connect": 0, "read": 0, "write": 0, "status": 0,
       "timeout": 0}, "status_codes": {"200": 10}, "non_2xx": 0,
       "latency_ms": {"mean": 1.0, "p50": 1.0, "p90": 1.0, "p99": 1.0, "max": 1.0}}


def level(learners: int, p99: float = 10.0, stream_failures: int = 0, net_us: float = 100.0) -> dict[str, Any]:
    """One level of a climb as bench_learners.climb gives it (held judged by its own rule)."""
    found: dict[str, Any] = {
        "learners": learners, "online": learners - stream_failures, "arrival_seconds": 1.0,
        "probe": {"click_to_frame_ms": {**DIST, "p99": p99}, "answer_ms": DIST, "actions": 5, "statuses": {"200": 5},
                  "non_2xx": 0, "errors": 0, "frames_missing": 0},
        "crowd": {"actions": 10, "answer_ms": DIST, "non_2xx": 0, "errors": 0}, "actions_per_second": 15.0,
        "valkey_net_us_per_action": net_us, "server_cpu_us_per_action": 900.0, "valkey_cpu_share": 0.1,
        "server_cpu_share": 0.3}
    found["held"] = bench_learners.held(found)
    return found


def side(kind: str, levels: list[dict[str, Any]]) -> dict[str, Any]:
    """A climb over exactly these levels, as bench_learners.climb sums it up."""
    first_miss = next((i for i, lv in enumerate(levels) if not lv["held"]), len(levels))
    found = {"kind": kind, "levels": levels, "knee": levels[first_miss - 1]["learners"] if first_miss else 0,
             "top": levels[-1]["learners"], "held_every_level": first_miss == len(levels), "stream_errors": 0,
             "server_errors": 0, "valkey_idle_cpu_share": 0.01}
    found["cpu_flat"] = bench_learners.cpu_flat(found)
    return found


def fabricated_results() -> dict[str, Any]:
    """A whole run's results, made up: the report writer must handle every section."""
    clicks = {"answer_ms": DIST, "painted_ms": DIST, "settled_ms": {**DIST, "p99": 70.0}}
    fan = {"clients": 2, "actions": 1, "connect_seconds": 0.1, "to_snapshot_ms": DIST, "to_first_effect_ms": DIST,
           "rss_mb": {"idle": 40.0, "streams_open": 41.0, "after_broadcasts": 41.0, "peak": 41.0},
           "without_first_snapshot": 0}
    sizes = {"keys": 1, "bytes": 100, "dump_bytes": 50}
    step = {"action": "complete-child", "round_trips": 4, "commands": 8, "names": []}
    probe = {"answer_ms": DIST, "click_to_frame_ms": DIST, "actions": 5, "statuses": {"200": 5}, "non_2xx": 0,
             "errors": 0, "frames_missing": 0}
    return {
        "quick": True, "machine": {"cpus": "2", "chromium": "Chromium"}, "site_errors": 0,
        "load": {"action throughput": "1.00 0.50 0.20"},
        "commands": {"complete_child": step, "tours": {"fanin": [step]}},
        "actions": {"connections": 50, "sandboxes": 2, "mix": "m", "walk": ["reset"], "baseline": WRK,
                    "site_mix": WRK, "ratio": 1.0, "round_ratios": [1.0]},
        "paint": {"clicks": 3, "idle": {"site": clicks, "bare": clicks}, "loaded": {"site": clicks, "bare": clicks},
                  "load": {"sandboxes": 2, "target_rate": 1.0, "non_2xx": 0},
                  "race": {"racers": 20, "none": clicks, "racing": {**clicks, "settled_ms": {**DIST, "p99": 120.0}},
                           "runs": 3, "non_2xx": 0, "errors": 0}},
        "fanout": {"baseline_one_stream": fan, "many_streams": fan},
        "pages": {"page": "/p", "static": "/s", "page_bytes": 1, "baseline_static": WRK, "dive": WRK,
                  "dive_first_visit": WRK, "ratio": 1.0, "ratio_first_visit": 1.0},
        "footprint": {"widgets": {"fanin": {"landed": sizes, "after_actions": sizes}}, "max_landed_bytes": 100,
                      "expired_sandboxes": 1, "after_expiry": {"keys": 0, "bytes": 0, "still_registered": 0}},
        "cluster": {"primaries": 3, "connections": 50, "sandboxes": 2, "mix": "m", "scaling_2_over_1": 1.0,
                    "workers": {n: {"baseline": WRK, "site_mix": WRK, "ratio": 1.0, "site_errors": 0}
                                for n in ("1", "2")}},
        "reset": None,
        "learners": {"levels": [250, 500, 1000], "window_seconds": 1.0, "period_seconds": 10.0,
                     "probe_every_seconds": 0.2, "p99_limit_ms": 100.0, "mix": "m", "workers": 2,
                     "site": side("site", [level(250), level(500), level(1000, p99=250.0)]),
                     "bare": side("bare", [level(250), level(500), level(1000)])},
        "fairness": {"window_seconds": 2.0, "every_seconds": 0.2, "unflooded": probe,
                     "flooded": {**probe, "answer_ms": {**DIST, "p50": 3.0}}, "ratio_p50": 3.0, "ratio_p99": 1.0,
                     "target_ratio": 2.0, "flood": {"reads": {"rate": 200.0, "target_rate": 200.0,
                                                              "statuses": {"429": 5}}}},
        "grader": {"runs": 3, "seconds": 1.0, "tries": 1, "graders": 2, "runs_per_second": 60.0,
                   "exercises": {"fan-in": {"checks": 6, "graded_ms": {"p50": 12.0, "p99": 15.0, "samples": 3},
                                            "direct_ms": {"p50": 10.0, "p99": 11.0, "samples": 3}}},
                   "runaway_answered_ms": {"p50": 500.0, "p99": 510.0, "samples": 1},
                   "sigkilled_back_ms": {"p50": 50.0, "p99": 60.0, "samples": 1}},
    }


def figures_of(text: str) -> str:
    return text.split("## Figures")[1].split("\n## ")[0]


def row(text: str, label: str) -> str:
    return next(line for line in figures_of(text).splitlines() if line.startswith("| " + label))


def test_the_report_is_the_figures_then_the_learners_then_commands_then_notes() -> None:
    text = report.render(fabricated_results())
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Machine", "## Figures", report.LEARNERS_HEADING,
                        "## Round trips and commands per action", "## Details"]
    assert "This is a `--quick` run" in text
    assert "action throughput 1.00 0.50 0.20" in text  # the machine's load as each benchmark started


def test_every_figure_of_the_hold_list_and_the_new_rows_are_in_the_figures_table() -> None:
    figures = figures_of(report.render(fabricated_results()))
    for label in ("Action throughput, fan-in mix", "Click to settled p50, idle", "Click to settled p99, idle",
                  "Click to settled p99, under load", "Reset with 5,000 idle sandboxes vs none",
                  "Fan-out broadcast p99", "Site RSS", "\"Complete child\" round trips",
                  "\"Complete child\" top-level commands", "Learners this machine holds", "Valkey CPU per action",
                  "Fairness: another learner's action p50", "Fairness: another learner's action p99",
                  "Grader: a run of \"fan-in\"", "Grader: runs per second", "Non-2xx answers",
                  "Action throughput on a 3-primary cluster", "another learner while 20 race"):
        assert label in figures, label
    assert "first paint" not in figures  # one paint path: the stream's


def test_a_figure_past_its_target_is_marked_missed_and_one_within_it_met() -> None:
    text = report.render(fabricated_results())
    assert row(text, "Click to settled p99, idle (ms)").startswith("| Click to settled p99, idle (ms) | 70.0 |")
    assert row(text, "Click to settled p99, idle").endswith("| **missed** |")
    assert row(text, "\"Complete child\" round trips").endswith("| met |")
    assert row(text, "Learners this machine holds").endswith("| **missed** |")  # the site held 500
    assert "| 500 | ≥ 1,000 (bare EVALSHA + SSE) |" in row(text, "Learners this machine holds")
    assert row(text, "Fairness: another learner's action p50").endswith("| **missed** |")  # 3× against 2×
    assert row(text, "Click to settled p99, another learner while 20 race").endswith("| **missed** |")


def test_the_learners_section_shows_each_level_of_both_sides() -> None:
    section = report.render(fabricated_results()).split(report.LEARNERS_HEADING)[1].split("\n## ")[0]
    assert "The site holds **500** learners" in section and "**≥ 1,000**" in section
    assert "| 1,000 | 1.0 / 250.0 | 1.0 / 10.0 |" in section and "| **no** / held |" in section


def test_the_knee_is_the_last_level_that_held() -> None:
    assert report.knee_text(side("site", [level(250), level(500, p99=101.0)])) == "250"
    assert report.knee_text(side("site", [level(250, stream_failures=1)])) == "< 250"
    every = side("bare", [level(n) for n in bench_learners.LEVELS])
    assert every["held_every_level"] and report.knee_text(every) == "≥ 4,000"


def test_a_level_holds_only_under_the_p99_limit_with_no_failure() -> None:
    assert bench_learners.held(level(500, p99=100.0))
    assert not bench_learners.held(level(500, p99=100.1))
    assert not bench_learners.held(level(500, stream_failures=1))


def test_the_cpu_per_action_compares_the_lowest_and_highest_level_measured() -> None:
    flat = bench_learners.cpu_flat(side("site", [level(250, net_us=100.0), level(500, net_us=120.0),
                                                 level(1000, net_us=150.0, p99=300.0)]))
    assert flat == {"low": 250, "high": 1000, "low_us": 100.0, "high_us": 150.0, "ratio": 1.5}


def test_the_knee_stays_below_the_first_level_that_did_not_hold_when_the_climb_keeps_going() -> None:
    climbed = side("site", [level(250), level(500, p99=300.0), level(1000)])
    assert climbed["knee"] == 250 and report.knee_text(climbed) == "250"


def test_the_reset_figure_is_reported_once_bench_reset_gives_it() -> None:
    results = fabricated_results()
    results["reset"] = {"with_idle": {"p50": 2.0, "p99": 3.0}, "without": {"p50": 2.0, "p99": 2.5}, "ratio": 1.2,
                        "crowd": 5000, "alone": {"emqlab": {"p50_ms": 2.0, "p99_ms": 2.5}},
                        "crowded": {"emqlab": {"p50_ms": 2.0, "p99_ms": 3.0}}}
    found = next(line for line in report.render(results).splitlines() if line.startswith("| Reset with 5,000"))
    assert "1.20×" in found and found.endswith("| met |")
