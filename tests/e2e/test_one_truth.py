"""One truth on every page: two pages of one sandbox paint the same snapshot.

Every control of every widget is pressed on page A; page B, which nobody
touches, must show the same version of the widget's state, the same readout,
the same outcome, the same keys and the same choices, from the stream alone.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import BrowserContext, Locator, expect

from tests.e2e.pages import WIDGETS, region, wait_until_live

OTHER_PAGE = "From another page of this sandbox: "


def controls(widget: Locator) -> list[str]:
    """The selectors of every control a learner can press, in page order."""
    found = []
    for selector in ("button[data-action]", "button[data-flow]", "input[type=checkbox]", "input[type=radio]"):
        items = widget.locator(f".controls {selector}, .ledger-picks {selector}")
        for i in range(items.count()):
            item = items.nth(i)
            if item.is_visible():
                found.append(_selector_of(item))
    return found


def _selector_of(item: Locator) -> str:
    attrs = item.evaluate(
        "n => ({action: n.dataset.action, flow: n.dataset.flow, role: n.dataset.role, type: n.type})"
    )
    if attrs["action"]:
        return f'button[data-action="{attrs["action"]}"]'
    if attrs["flow"]:
        return f'button[data-flow="{attrs["flow"]}"]'
    return f'input[data-role="{attrs["role"]}"]'


def same_picture(a: Locator, b: Locator) -> None:
    ver = a.get_attribute("data-ver")
    expect(b).to_have_attribute("data-ver", ver or "")
    expect(b.locator('[data-role="readout"]')).to_have_text(a.locator('[data-role="readout"]').inner_text())
    outcome_a = a.locator('[data-role="outcome"]')
    outcome_b = b.locator('[data-role="outcome"]')
    if outcome_a.is_hidden():
        expect(outcome_b).to_be_hidden()
    else:
        text = outcome_a.inner_text()
        expect(outcome_b).to_have_text(
            re.compile("^(" + re.escape(OTHER_PAGE) + ")?" + re.escape(text.removeprefix(OTHER_PAGE)) + "$")
        )
    rows = (
        "rows => rows.map(r => [r.dataset.key, r.querySelector('.key-type').textContent,"
        " r.querySelector('.key-value').textContent])"
    )
    keys_a = a.locator("[data-role=keys] tr[data-key]").evaluate_all(rows)
    assert b.locator("[data-role=keys] tr[data-key]").evaluate_all(rows) == keys_a
    for box in ("input[type=checkbox]", "input[type=radio]"):
        states_a = a.locator(box).evaluate_all("xs => xs.map(x => x.checked)")
        assert b.locator(box).evaluate_all("xs => xs.map(x => x.checked)") == states_a


def press(widget: Locator, selector: str) -> None:
    control = widget.locator(selector).first
    before = widget.get_attribute("data-ver")
    if control.is_disabled() or (control.get_attribute("type") == "radio" and control.is_checked()):
        return  # nothing to press: a disabled button, or the choice already made
    control.click()
    # the page that clicked paints a newer version of the widget's state
    expect(widget).not_to_have_attribute("data-ver", before or "")
    expect(widget).not_to_have_attribute("aria-busy", "true")


@pytest.mark.parametrize("name", sorted(WIDGETS))
def test_every_control_pressed_on_one_page_shows_on_the_other_page_of_the_sandbox(
    context: BrowserContext, name: str
) -> None:
    dive = WIDGETS[name][0]
    page_a, page_b = context.new_page(), context.new_page()
    for page in (page_a, page_b):
        page.goto(dive)
        wait_until_live(page)
    a, b = region(page_a, name), region(page_b, name)
    a.get_by_role("button", name="Reset", exact=True).click()
    expect(a.locator('[data-role="outcome"]')).to_contain_text("Reset")
    same_picture(a, b)
    for selector in controls(a):
        if selector.endswith('"reset"]'):
            continue
        press(a, selector)
        same_picture(a, b)
    press(a, 'button[data-action="reset"]')
    same_picture(a, b)
    for page in (page_a, page_b):
        page.close()


def test_an_outcome_never_outlives_the_state_it_describes(context: BrowserContext) -> None:
    """After another page resets the widget, the old outcome box goes with the old state."""
    page_a, page_b = context.new_page(), context.new_page()
    for page in (page_a, page_b):
        page.goto(WIDGETS["fanin"][0])
        wait_until_live(page)
    a, b = region(page_a, "fanin"), region(page_b, "fanin")
    b.get_by_role("button", name="Complete child").click()
    expect(a.locator('[data-role="outcome"]')).to_contain_text(OTHER_PAGE + "Completed")
    b.get_by_role("button", name="Reset", exact=True).click()
    expect(a.locator('[data-role="outcome"]')).to_contain_text(OTHER_PAGE + "Reset")
    expect(a.locator('[data-role="dependencies"]')).to_have_text("3")
