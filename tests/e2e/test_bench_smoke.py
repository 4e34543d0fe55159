"""The click-to-paint benchmark runs for about a second, so it does not rot.

In its own file under tests/e2e: Playwright's sync API runs here, apart from
the asyncio tests. It checks the structure of the answer, never a time.
"""

from __future__ import annotations

from playwright.sync_api import Browser

from bench import bench_paint
from tests.e2e.conftest import Site


def test_click_to_paint_runs_idle_and_under_load(browser: Browser, site: Site) -> None:
    result = bench_paint.run(site.url, clicks=6, load_rate=20, load_sandboxes=10, browser=browser)
    for phase in ("idle", "loaded"):
        for what in ("dom_ms", "frame_ms"):
            figures = result[phase][what]
            assert figures["clicks"] == 6
            assert 0 < figures["p50"] <= figures["p99"]
    assert result["load"]["sandboxes"] == 10 and result["load"]["actions"] > 0
    assert result["load"]["non_200"] == 0 and result["load"]["errors"] == 0
