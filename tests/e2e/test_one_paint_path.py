"""One paint path: every page paints the snapshots the server read from Valkey, in `ver` order."""

from __future__ import annotations

import time

from playwright.sync_api import BrowserContext, Page, Route, expect

from tests.e2e.rooms import fanin

DIVE = "/flows/parent-and-children"


def test_a_page_never_paints_an_older_snapshot(page: Page) -> None:
    """A snapshot that arrives late and older than the one painted (here the
    page's first read, held back and answered with an earlier state) is dropped."""
    page.goto("/")  # the visitor's cookie
    older = page.request.get("/api/widgets/fanin/state").json()  # 0 of 3 children complete
    assert page.request.post("/api/widgets/fanin/complete-child", data={}).ok  # now 1 of 3

    def late_and_old(route: Route) -> None:
        time.sleep(1.5)  # the stream's fresh snapshot paints first
        route.fulfill(json=older)

    page.route("**/api/widgets/fanin/state", late_and_old)
    page.goto(DIVE)
    readout = fanin(page).locator('[data-role="readout"]')
    expect(readout).to_contain_text("1 of 3 children complete")
    page.wait_for_timeout(2500)  # the held answer has come by now
    expect(readout).to_contain_text("1 of 3 children complete")
    assert int(fanin(page).get_attribute("data-ver") or 0) > older["snapshot"]["ver"]


def test_the_page_that_clicks_paints_the_same_snapshot_as_another_page(context: BrowserContext) -> None:
    first, second = context.new_page(), context.new_page()
    for page in (first, second):
        page.goto(DIVE)
        expect(fanin(page).locator('[data-role="dependencies"]')).to_have_text("3")
    # waited for, not listened for: a listener's event may come after the checks below
    with first.expect_response(lambda r: "/complete-child" in r.url) as answered:
        fanin(first).get_by_role("button", name="Complete child").click()
    expect(fanin(first).locator('[data-role="dependencies"]')).to_have_text("2")
    expect(fanin(second).locator('[data-role="dependencies"]')).to_have_text("2")
    assert "snapshot" not in answered.value.json()  # the answer says what ran; the stream paints
    expect(fanin(second)).to_have_attribute("data-ver", fanin(first).get_attribute("data-ver") or "")
