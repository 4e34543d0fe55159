"""Accessibility in Chromium: axe-core finds no violation on any page, and
every widget is the region, with the controls, that the design names.

Each page is checked once its widgets have drawn the keys Valkey returned,
then again with every panel a learner can open (raw keys, effects log, the
recorded run) opened, so what hides behind a click is checked too.

DESIGN.md's table of widgets is the contract of the region names (written
once, in tests/contract.py) and of the controls' visible labels (here).
Every other e2e file finds a widget by its `data-widget` name, taken from
the code.
"""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Locator, Page, expect

from tests.contract import CONSOLE_WORDS, REGION_WORDS
from tests.e2e.pages import COURSE, DIVES, WIDGETS, app_pages, on_dive, region, wait_until_live

AXE = Axe()

Name = str | re.Pattern[str]
# DESIGN.md's table, by the words of each region's name (tests/contract.py
# holds which widget's region they name): the buttons by visible label, the
# checkboxes and radios by label, the groups by name.
CONTROLS: dict[str, tuple[tuple[Name, ...], tuple[str, ...], tuple[str, ...]]] = {
    "@enqueue_flow": (("Next move", "Previous move", "Run atomically", "Reset"), ("Use a non-JOB id",), ()),
    "fan-in": (("Claim", "Complete child", "Redeliver last completion", re.compile("stale"), "Reset"), (), ()),
    "native": (("Send as a script", "Send as EMQ.COMPLETE", "Send the flat form", "Complete a flat job natively",
                "Reset"), (), ()),
    "tree": (("Reset",), (), ()),
    "ledger": (("Next flow", "Run the batch", "Retry flow 4", "Try an ill-formed id", "Reset",
                "Flow 1", "Flow 2", "Flow 3", "Flow 4"), (), ("Your own batch",)),
    "outbox": (("Complete child", "Pump tick", "Crash before trim", "Add a poison entry", "Aged pump tick",
                "Reset"), (), ()),
    "failure policy": (("Fail child at the cap", re.compile("attempts left"), "Reset"),
                       ("fail the parent", "ignore the dependency"), ()),
    "results": (("Complete child", "Fail child at the cap", "Read the results", "Reset"), (), ()),
    "Race": (("Run", "Reset"), ("Workers", "Children", "Seed", "a worker crashes after its claim",
                                "a lease lapses while its worker stalls", "a completion is delivered twice",
                                "use the early-release complete (below)"), ("Race controls",)),
}


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


def test_the_design_table_names_every_widget_the_site_has() -> None:
    assert set(REGION_WORDS) == set(WIDGETS)
    assert set(CONTROLS) == set(REGION_WORDS.values())


@pytest.mark.parametrize("path", DIVES)
def test_each_widget_is_the_region_the_design_names_with_its_controls(page: Page, path: str) -> None:
    page.goto(path)
    wait_until_live(page)
    for name in on_dive(path):
        words = REGION_WORDS[name]
        buttons, choices, groups = CONTROLS[words]
        found = page.get_by_role("region", name=re.compile(re.escape(words), re.IGNORECASE))
        expect(found).to_have_count(1)
        # the region the words find is the widget's own root
        expect(found).to_have_attribute("data-widget", name)
        for label in buttons:
            expect(control(found, label)).to_be_visible()
        for label in choices:
            expect(found.get_by_label(label, exact=True)).to_be_visible()
        for group in groups:
            expect(found.get_by_role("group", name=group, exact=True)).to_be_visible()
        # its state changes are announced: the region holds a polite live region
        expect(found.locator('[aria-live="polite"]').first).to_be_attached()
        previous_beside_next(region(page, name), [a.label for a in WIDGETS[name].widget.actions.values()])
    console = page.get_by_role("region", name=re.compile(re.escape(CONSOLE_WORDS), re.IGNORECASE))
    expect(console).to_have_count(1)
    expect(console.get_by_role("textbox", name="Command", exact=True)).to_be_visible()
    expect(console.get_by_role("button", name="Run", exact=True)).to_be_visible()
    expect(console.get_by_role("log")).to_be_attached()


def control(widget: Locator, label: Name) -> Locator:
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
