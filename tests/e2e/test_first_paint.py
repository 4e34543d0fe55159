"""A first visit (no cookie): every widget is drawn from the specimen, read from Valkey, and the
stream's first frame of the visitor's own sandbox swaps in without moving the page.

The page is measured in the browser around each widget's first frame: the region's box
just before lab.js morphs the frame in and just after (an `EventSource` listener wrapped by
an init script), and the layout shifts Chromium reports (`PerformanceObserver`), as
Lighthouse counts them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import DIVES, OWN_VER, on_dive, region, wait_until_live

VIEWPORT = {"width": 1350, "height": 940}  # Lighthouse's desktop width
BULK_FLOWS = next(d for d in DIVES if d.endswith("/bulk-flows"))

MEASURE = """
(() => {
  window.__firstFrames = {};
  window.__shift = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shift += e.value;
  }).observe({ type: "layout-shift", buffered: true });
  const box = (root) => {
    const r = root.getBoundingClientRect();
    return { top: r.top + window.scrollY, height: r.height, ver: root.dataset.ver };
  };
  const add = EventSource.prototype.addEventListener;
  EventSource.prototype.addEventListener = function (type, listener, options) {
    if (type !== "widget") return add.call(this, type, listener, options);
    return add.call(this, type, (event) => {
      const name = (/data-widget="([^"]+)"/.exec(event.data) || [])[1];
      const root = name && document.querySelector(`section[data-widget="${name}"]`);
      const first = Boolean(root) && !(name in window.__firstFrames);
      const before = first ? box(root) : null;
      listener.call(this, event);
      if (first) window.__firstFrames[name] = { before, after: box(root) };
    }, options);
  };
})();
"""


def first_visit(browser: Browser, site: Site) -> Page:
    context = browser.new_context(base_url=site.url, viewport=VIEWPORT)  # type: ignore[arg-type]
    context.set_default_timeout(10_000)
    context.add_init_script(MEASURE)
    return context.new_page()


@pytest.mark.parametrize("dive", DIVES)
def test_on_a_first_visit_no_widget_moves_when_its_own_sandboxs_first_frame_swaps_in(
        browser: Browser, site: Site, dive: str) -> None:
    page = first_visit(browser, site)
    try:
        page.goto(dive)
        wait_until_live(page)
        frames: dict[str, Any] = page.evaluate("window.__firstFrames")
        for name in on_dive(dive):
            seen = frames[name]
            # drawn from the specimen (landed, no sandbox's state), then the visitor's own
            assert seen["before"]["ver"] == "0" and OWN_VER.match(seen["after"]["ver"]), (name, seen)
            assert abs(seen["after"]["height"] - seen["before"]["height"]) < 1, (name, seen)
            assert abs(seen["after"]["top"] - seen["before"]["top"]) < 1, (name, seen)
    finally:
        page.context.close()


def test_a_first_visit_to_bulk_flows_at_desktop_width_shifts_its_layout_by_less_than_five_hundredths(
        browser: Browser, site: Site) -> None:
    page = first_visit(browser, site)
    try:
        page.goto(BULK_FLOWS)
        wait_until_live(page)
        page.wait_for_timeout(1000)  # whatever the stream's first frames would move has moved by now
        shift = page.evaluate("window.__shift")
        assert shift < 0.05, shift
    finally:
        page.context.close()


def test_a_first_visit_without_javascript_shows_every_widget_landed(browser: Browser, site: Site) -> None:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    try:
        page = context.new_page()
        for dive in DIVES:
            context.clear_cookies()  # each dive a first visit
            page.goto(dive)
            expect(page.get_by_text("reload this page")).to_have_count(0)
            for name in on_dive(dive):
                box = region(page, name)
                expect(box).to_have_attribute("data-ver", "0")
                expect(box.locator('[data-role="readout"]')).not_to_have_text(re.compile(r"^(Reading the keys.*)?$"))
                expect(box.locator('[data-role="keys"] table.keys caption').first).to_have_text(
                    re.compile(r"hash slot \d+ · \d+ keys?$"))
            if "fanin" in on_dive(dive):
                expect(region(page, "fanin").locator('[data-role="dependencies"]')).to_have_text("3")
    finally:
        context.close()
