"""Accessibility in Chromium: axe-core finds no violation on any page, and
every widget is the region, with the controls, that the design names.

Each page is checked once its widgets have drawn the keys Valkey returned,
then again with every panel a learner can open (raw keys, effects log, the
and the rest) opened, so what hides behind a click is checked too.

DESIGN.md's table of widgets is the contract of the region names and of the
controls' visible labels: each widget's row is in its own module
(`Widget.design`). Every other e2e file finds a widget by its `data-widget`
name, taken from the code.
"""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Locator, Page, expect

from tests.contract import CONSOLE_WORDS
from tests.e2e.pages import COURSE, DIVES, WIDGETS, app_pages, on_dive, region, wait_until_live

AXE = Axe()


def test_the_pages_found_from_the_app_include_every_page_design_names_besides_the_course() -> None:
    # a view renamed away from `page` would silently drop its page from axe and the reading checks
    assert {"/instructor", "/progress", "/room"} <= set(app_pages())


def violations(page: Page) -> str:
    results = AXE.run(page)
    return "" if results.violations_count == 0 else results.generate_report()


@pytest.mark.parametrize("path", [*COURSE[: -len(DIVES)], *app_pages(), "/no-such-page"])
def test_axe_finds_no_violation_on_the_page(page: Page, path: str) -> None:
    response = page.goto(path)
    assert response is not None
    # a page for the instructor answers 401 with its sign-in form until the token is given
    wanted = {404} if path == "/no-such-page" else {200} if path in COURSE else {200, 401}
    assert response.status in wanted, (path, response.status)
    report = violations(page)
    assert not report, report


@pytest.mark.parametrize("path", DIVES)
def test_axe_finds_no_violation_on_a_dive_live_then_with_every_panel_open(page: Page, path: str) -> None:
    response = page.goto(path)
    assert response is not None and response.status == 200
    wait_until_live(page)
    report = violations(page)
    assert not report, report
    ids = page.eval_on_selector_all("[id]", "(nodes) => nodes.map((n) => n.id)")
    assert len(ids) == len(set(ids)), f"ids used twice: {sorted({i for i in ids if ids.count(i) > 1})}"
    # one step, so the key panel has a changed row, the log an entry and the outcome a sentence
    first = page.locator("[data-widget]").first
    before = first.get_attribute("data-ver")
    first.locator("button[data-action].primary").click()
    expect(first).not_to_have_attribute("data-ver", before or "")
    expect(first.locator("[data-role='outcome']")).to_be_visible()
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    report = violations(page)
    assert not report, report


@pytest.mark.parametrize("path", DIVES)
def test_each_widget_is_the_region_the_design_names_with_its_controls(page: Page, path: str) -> None:
    page.goto(path)
    wait_until_live(page)
    for name in on_dive(path):
        design = WIDGETS[name].widget.design
        found = page.get_by_role("region", name=re.compile(re.escape(design.region), re.IGNORECASE))
        expect(found).to_have_count(1)
        # the region the words find is the widget's own root
        expect(found).to_have_attribute("data-widget", name)
        for label in (*design.buttons, *(re.compile(re.escape(words)) for words in design.containing)):
            expect(control(found, label)).to_be_visible()
        for label in design.choices:
            expect(found.get_by_label(label, exact=True)).to_be_visible()
        for group in design.groups:
            expect(found.get_by_role("group", name=group, exact=True)).to_be_visible()
        # its state changes are announced: the region holds a polite live region
        expect(found.locator('[aria-live="polite"]').first).to_be_attached()
        previous_beside_next(region(page, name), [a.label for a in WIDGETS[name].widget.actions.values()])
    console = page.get_by_role("region", name=re.compile(re.escape(CONSOLE_WORDS), re.IGNORECASE))
    expect(console).to_have_count(1)
    expect(console.get_by_role("textbox", name="Command", exact=True)).to_be_visible()
    expect(console.get_by_role("button", name="Run", exact=True)).to_be_visible()
    expect(console.get_by_role("log")).to_be_attached()


def control(widget: Locator, label: str | re.Pattern[str]) -> Locator:
    if isinstance(label, str):
        return widget.get_by_role("button", name=label, exact=True)
    return widget.get_by_role("button", name=label).first


def previous_beside_next(widget: Locator, labels: list[str]) -> None:
    """Every stepper has `Previous …` beside `Next …`, in the same row of controls."""
    for label in (x for x in labels if x.startswith("Next ")):
        previous = "Previous " + label.removeprefix("Next ")
        assert previous in labels, labels
        row = widget.locator(".controls", has=widget.page.get_by_role("button", name=label, exact=True))
        expect(row.get_by_role("button", name=previous, exact=True)).to_be_visible()
