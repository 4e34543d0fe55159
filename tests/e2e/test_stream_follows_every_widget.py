"""A page's stream follows every widget on it, however late the page's script
arrives: one module (lab.js) drives every widget, so a slow network or a busy
machine that delays it delays the stream, never drops a widget from it."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, Request, Route, expect

from tests.e2e.pages import DIVES, WIDGETS, on_dive, region, settled_after, wait_until_live

# every widget that is not the first of its dive (the first is covered by every other test)
LATE = [name for dive in DIVES for name in on_dive(dive)[1:]]


def streamed(request: Request) -> list[str]:
    return sorted(parse_qs(urlsplit(request.url).query)["widgets"][0].split(","))


@pytest.mark.parametrize("late", LATE)
def test_a_widget_is_in_the_pages_stream_when_the_pages_script_loads_late(page: Page, late: str) -> None:
    dive = WIDGETS[late].dive
    delayed: list[str] = []

    def slowly(route: Route) -> None:
        delayed.append(route.request.url)
        time.sleep(0.6)  # the route's own delay: the script arrives long after the page was parsed
        route.continue_()

    page.route("**/static/widgets/lab.js", slowly)
    with page.expect_request(lambda r: "/api/stream" in r.url and late in r.url, timeout=15_000) as opened:
        page.goto(dive)
    assert delayed, "the page never fetched lab.js: this test's premise is stale"
    assert streamed(opened.value) == sorted(on_dive(dive))
    wait_until_live(page)
    # and it is live: a press on another page of the sandbox reaches it by the stream
    other = page.context.new_page()
    other.goto(dive)
    wait_until_live(other)
    acting = region(other, late)
    before = acting.get_attribute("data-ver")
    acting.locator("button[data-action].primary").click()
    settled_after(acting, before)
    expect(region(page, late)).to_have_attribute("data-ver", acting.get_attribute("data-ver") or "")
    expect(region(page, late).locator('[data-role="readout"]')).to_have_text(
        acting.locator('[data-role="readout"]').inner_text())
