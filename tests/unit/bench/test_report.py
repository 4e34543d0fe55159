"""The performance report renders every figure it is given (no benchmark run)."""

from __future__ import annotations

from bench import run as bench_run


def test_the_report_renders_every_figure() -> None:
    # A report from a fabricated result: the writer handles every section.
    fake_wrk = {"requests": 10, "seconds": 1.0, "rps": 10.0, "errors": {"connect": 0, "read": 0, "write": 0,
                "status": 0, "timeout": 0}, "status_codes": {"200": 10},
                "latency_ms": {"mean": 1.0, "p50": 1.0, "p90": 1.0, "p99": 1.0, "max": 1.0}}
    dist = {"p50": 1.0, "p95": 1.0, "p99": 1.0, "mean": 1.0, "clicks": 3}
    fan = {"clients": 2, "actions": 1, "connect_seconds": 0.1,
           "to_snapshot_ms": {"p50": 1.0, "p99": 1.0, "max": 1.0, "mean": 1.0, "samples": 2},
           "to_first_effect_ms": {"p50": 1.0, "p99": 1.0, "max": 1.0, "mean": 1.0, "samples": 2},
           "rss_mb": {"idle": 40.0, "streams_open": 41.0, "after_broadcasts": 41.0, "peak": 41.0}}
    sizes = {"keys": 1, "bytes": 100, "dump_bytes": 50}
    results = {
        "quick": True, "params": bench_run.QUICK, "machine": {"cpus": "2", "chromium": "Chromium"}, "site_errors": 0,
        "actions": {"connections": 50, "sandboxes": 2, "baseline": fake_wrk, "site_mix": fake_wrk,
                    "site_reset_only": fake_wrk, "complete_child_rps_derived": 10.0, "ratio_mix": 1.0,
                    "ratio_complete_child": 1.0},
        "paint": {"idle": {"dom_ms": dist, "frame_ms": dist}, "loaded": {"dom_ms": dist, "frame_ms": dist},
                  "load": {}, "ratio_p50": 1.0, "ratio_p99": 1.0, "clicks": 3},
        "fanout": {"baseline_one_stream": fan, "many_streams": fan, "ratio_p99": 1.0},
        "pages": {"page": "/p", "static": "/s", "page_bytes": 1, "baseline_static": fake_wrk, "dive": fake_wrk,
                  "dive_first_visit": fake_wrk, "ratio": 1.0, "ratio_first_visit": 1.0},
        "footprint": {"widgets": {"fanin": {"landed": sizes, "after_actions": sizes}}, "max_landed_bytes": 100,
                      "expired_sandboxes": 1, "after_expiry": {"keys": 0, "bytes": 0, "still_registered": 0}},
        "bulk": {"flows": 1, "children_per_flow": 3, "variants": {"flows.add x N": {"flows_per_second": 1.0}}},
        "cluster": {"primaries": 3, "connections": 50, "sandboxes": 2, "mix": "m", "scaling_2_over_1": 1.0,
                    "workers": {n: {"baseline": fake_wrk, "site_mix": fake_wrk, "ratio": 1.0, "site_errors": 0}
                                for n in ("1", "2")}},
    }
    text = bench_run.render(results)
    for heading in ("## Machine", "## Summary", "## 1. Action throughput", "## 2. Click to paint", "## 3. Fan-out",
                    "## 4. Pages", "## 5. Footprint", bench_run.CLUSTER_HEADING, "## Notes on the targets"):
        assert heading in text
