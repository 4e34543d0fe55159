"""The click-to-settled benchmark runs for about a second, so it does not rot.

In its own file under tests/e2e: Playwright's sync API runs here, apart from
the asyncio tests. It checks the structure of the answer, never a time.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from bench import bench_paint, servers
from tests.e2e.conftest import Site

# `make bench-smoke` runs it, not `make test`: it keeps a benchmark running, it tests no feature.
pytestmark = pytest.mark.bench_smoke


def test_click_to_settled_runs_idle_under_load_and_while_others_race_beside_the_bare_page(
        browser: Browser, site: Site) -> None:
    with servers.serve_baseline(site.valkey.url) as bare:
        result = bench_paint.run(site.url, bare.url, clicks=3, load_rate=20, load_sandboxes=5, browser=browser,
                                  racers=2)
    for phase in ("idle", "loaded"):
        for page in ("site", "bare"):
            run = result[phase][page]
            answer, painted, settled = run["answer_ms"], run["painted_ms"], run["settled_ms"]
            assert answer["samples"] == painted["samples"] == settled["samples"] == 3
            # settled: the answer came and the paint showed it, whichever came first
            assert 0 < max(answer["p50"], painted["p50"]) <= settled["p50"] <= settled["p99"], run
        assert set(result["ratios"][phase]) == {"answer_ms", "painted_ms", "settled_ms"}
    assert result["load"]["sandboxes"] == 5 and result["load"]["actions"] > 0
    assert result["load"]["non_2xx"] == 0 and result["load"]["errors"] == 0
    race = result["race"]
    assert race["racers"] == 2 and race["runs"] > 0 and race["non_2xx"] == 0
    assert race["racing"]["settled_ms"]["samples"] == race["none"]["settled_ms"]["samples"] == 3
