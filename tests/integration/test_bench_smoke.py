"""Every benchmark runs for about a second, so none of them rots.

These check that each `bench/*.run()` still works against the real site and
returns a sane structure (numbers present and positive, no errors). They
never assert a time: the figures live in docs/PERFORMANCE.md (`make bench`).
The browser benchmark has its smoke test in tests/e2e/test_bench_smoke.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from bench import (
    bench_actions,
    bench_bulk,
    bench_cluster,
    bench_fanout,
    bench_footprint,
    bench_pages,
    servers,
)
from bench import run as bench_run
from server.valkey.process import ValkeyProcess


@pytest.fixture(autouse=True, scope="module")
def wrk_installed() -> None:
    """The throughput benchmarks drive wrk: its absence is a failure, never a skip."""
    if shutil.which("wrk") is None:
        pytest.fail("wrk is not installed: `make test` installs it (Debian package wrk)")


@pytest.fixture(scope="module")
def bench_valkey() -> Iterator[ValkeyProcess]:
    # Its own server: the session's is flushed between tests, and the site
    # keeps its cookie secret there.
    with ValkeyProcess() as server:
        yield server


@pytest.fixture(scope="module")
def site(bench_valkey: ValkeyProcess) -> Iterator[servers.Served]:
    with servers.serve_site(bench_valkey.url) as served:
        yield served


@pytest.fixture(scope="module")
def baseline(bench_valkey: ValkeyProcess) -> Iterator[servers.Served]:
    with servers.serve_baseline(bench_valkey.url) as served:
        yield served


def sane_wrk(result: dict) -> None:
    assert result["requests"] > 0 and result["rps"] > 0
    assert result["latency_ms"]["p50"] > 0
    assert result["errors"]["connect"] == 0 and result["errors"]["status"] == 0, result
    assert set(result["status_codes"]) == {"200"}, result["status_codes"]


def test_action_throughput_runs(site: servers.Served, baseline: servers.Served) -> None:
    result = bench_actions.run(site.url, baseline.url, seconds=1, sandboxes=120)
    for key in ("baseline", "site_mix", "site_reset_only", "site_mix_with_streams"):
        sane_wrk(result[key])
    assert result["ratio_mix"] > 0 and result["complete_child_rps_derived"] > 0
    assert result["streams_held"]["streams"] == 120 and result["streams_held"]["errors"] == 0
    assert site.tracebacks() == 0, site.log_tail()


def test_cluster_throughput_runs_with_1_and_2_workers() -> None:
    result = bench_cluster.run(seconds=1, sandboxes=120, single_reference=False)
    assert result["primaries"] == 3 and set(result["workers"]) == {"1", "2"}
    for run in result["workers"].values():
        sane_wrk(run["baseline"])
        sane_wrk(run["site_mix"])
        assert run["ratio"] > 0 and run["site_errors"] == 0
    assert result["scaling_2_over_1"] > 0
    section = bench_run.render_cluster(result, 1)
    assert section.startswith(bench_run.CLUSTER_HEADING) and "site, 2 workers" in section
    report = "# Performance\n\n## 1. Action throughput\n\nx\n\n## Bulk flows (host library)\n\ny\n"
    once = bench_run.splice_cluster(report, section)
    assert once.index("## 1. Action") < once.index(bench_run.CLUSTER_HEADING) < once.index("## Bulk flows")
    assert bench_run.splice_cluster(once, section) == once  # a second run replaces, never duplicates


def test_fanout_runs(site: servers.Served) -> None:
    result = bench_fanout.run(site, clients=20, actions=3)
    many = result["many_streams"]
    assert many["clients"] == 20 and many["to_snapshot_ms"]["samples"] == 60
    assert many["to_snapshot_ms"]["p99"] > 0 and many["rss_mb"]["peak"] > 0
    assert result["baseline_one_stream"]["to_snapshot_ms"]["samples"] == 3


def test_pages_run(site: servers.Served) -> None:
    result = bench_pages.run(site.url, seconds=1)
    for key in ("baseline_static", "dive", "dive_first_visit"):
        sane_wrk(result[key])
    assert result["ratio"] > 0 and result["page_bytes"] > 0


def test_bulk_runs(bench_valkey: ValkeyProcess) -> None:
    result = bench_bulk.run(bench_valkey.url, flows=20)
    assert set(result["variants"]) == {"add_bulk", "flows.add x N", "add_bulk_pipelined"}
    assert all(v["flows_per_second"] > 0 for v in result["variants"].values())


def test_footprint_runs_and_expiry_leaves_nothing(site: servers.Served, bench_valkey: ValkeyProcess) -> None:
    result = bench_footprint.run(site.url, bench_valkey.url)
    from server.widgets import WIDGETS

    assert set(result["widgets"]) == set(WIDGETS)
    assert all(w["landed"]["bytes"] > 0 and w["landed"]["keys"] > 0 for w in result["widgets"].values())
    assert result["after_expiry"] == {"keys": 0, "bytes": 0, "still_registered": 0}
