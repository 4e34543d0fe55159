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
    report,
    report_notes,
    servers,
)
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
    """The harness worked: wrk got answers, all of them 2xx (never a speed)."""
    assert result["requests"] > 0, result
    assert result["errors"]["connect"] == 0 and result["non_2xx"] == 0, result
    assert set(result["status_codes"]) == {"200"}, result["status_codes"]


def test_action_throughput_runs(site: servers.Served, baseline: servers.Served) -> None:
    # A few connections for a few seconds: on a loaded machine, 50 connections
    # for 1 s could finish no request at all, and that says nothing about the harness.
    result = bench_actions.run(site.url, baseline.url, seconds=3, connections=4, sandboxes=16)
    for key in ("baseline", "site_mix"):
        sane_wrk(result[key])
    assert result["ratio"] > 0 and result["mix"] == bench_actions.MIX
    assert site.tracebacks() == 0, site.log_tail()


def test_cluster_throughput_runs_with_1_and_2_workers() -> None:
    result = bench_cluster.run(seconds=1, sandboxes=120, single_reference=False)
    assert result["primaries"] == 3 and set(result["workers"]) == {"1", "2"}
    for run in result["workers"].values():
        sane_wrk(run["baseline"])
        sane_wrk(run["site_mix"])
        assert run["ratio"] > 0 and run["site_errors"] == 0
    assert result["scaling_2_over_1"] > 0
    section = report_notes.render_cluster(result, 1)
    assert section.startswith(report_notes.CLUSTER_HEADING) and "site, 2 workers" in section
    rows = report.cluster_rows(result)
    text = ("# Performance\n\n## Figures\n\n| a | b |\n|---|---|\n| Action throughput, fan-in mix | 1 |\n\n"
            "## Notes\n\n### Action throughput\n\nx\n\n### Click to settled\n\ny\n")
    once = report.splice_cluster(text, section, rows)
    assert once.index("### Action throughput") < once.index(report_notes.CLUSTER_HEADING) \
        < once.index("### Click to settled")
    assert once.count("| " + report.CLUSTER_ROW) == 2
    assert report.splice_cluster(once, section, rows) == once  # a second run replaces, never duplicates


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
