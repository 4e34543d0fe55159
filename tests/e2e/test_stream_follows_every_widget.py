"""A page's stream follows every widget on it, however the browser schedules
the page's module scripts: a module that loads late (a slow network, a busy
machine) is still in the stream, so its widget gets the live snapshots."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, Request, Route, expect

from tests.e2e.pages import WIDGETS, region, wait_until_live

DIVE = "/flows/parent-and-children"
ON_DIVE = sorted(name for name, (dive, _) in WIDGETS.items() if dive == DIVE)


def streamed(request: Request) -> list[str]:
    return sorted(parse_qs(urlsplit(request.url).query)["widgets"][0].split(","))


@pytest.mark.parametrize("late", ON_DIVE[1:])
def test_a_widget_whose_module_loads_late_is_still_in_the_pages_stream(page: Page, late: str) -> None:
    def slowly(route: Route) -> None:
        time.sleep(0.6)  # long after the other modules ran
        route.continue_()

    page.route(f"**/static/widgets/{late}.js", slowly)
    with page.expect_request(lambda r: "/api/stream" in r.url, timeout=15_000) as opened:
        page.goto(DIVE)
    assert streamed(opened.value) == ON_DIVE
    wait_until_live(page)
    # and it is live: a write from another page of the sandbox reaches it by the stream
    other = page.context.new_page()
    other.goto(DIVE)
    region(other, "fanin").get_by_role("button", name="Complete child").click()
    expect(region(page, "fanin").locator('[data-role="dependencies"]')).to_have_text("2")
