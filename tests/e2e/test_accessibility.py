"""axe-core inside Chromium: no violation on any page of the course.

Each page is checked once its widgets have drawn the keys Valkey returned,
then again with every panel a learner can open (raw keys, effects log, the
recorded run) opened, so what hides behind a click is checked too.
"""

from __future__ import annotations

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

from tests.e2e.pages import COURSE, DIVES, wait_until_live

AXE = Axe()
# The app's own pages besides the course: joining a room, and the instructor's
# sign-in form (/instructor answers 401 with it until the token is given), and
# the learner's progress.
APP_PAGES = {"/room": 200, "/instructor": 401, "/progress": 200}


def violations(page: Page) -> str:
    results = AXE.run(page)
    return "" if results.violations_count == 0 else results.generate_report()


@pytest.mark.parametrize("path", [*COURSE, *APP_PAGES, "/no-such-page"])
def test_axe_finds_no_violation_on_the_page(page: Page, path: str) -> None:
    response = page.goto(path)
    assert response is not None
    assert response.status == APP_PAGES.get(path, 404 if path == "/no-such-page" else 200)
    wait_until_live(page)
    report = violations(page)
    assert not report, report


@pytest.mark.parametrize("path", DIVES)
def test_axe_finds_no_violation_with_every_widget_panel_open(page: Page, path: str) -> None:
    page.goto(path)
    wait_until_live(page)
    # one step first, so the key panel has a changed row and the log an entry
    page.locator("[data-widget] button[data-action].primary").first.click()
    page.locator("[data-widget] [data-role='outcome']:not([hidden])").first.wait_for()
    page.evaluate("document.querySelectorAll('[data-widget] details').forEach((d) => { d.open = true; })")
    report = violations(page)
    assert not report, report


@pytest.mark.parametrize("path", DIVES)
def test_no_id_is_used_twice_on_a_dive(page: Page, path: str) -> None:
    page.goto(path)
    wait_until_live(page)
    ids = page.eval_on_selector_all("[id]", "(nodes) => nodes.map((n) => n.id)")
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
