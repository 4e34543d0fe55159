"""Every widget driven by the keyboard alone: Tab to a control, Enter or Space.

No click anywhere: focus moves with the Tab key (from the widget's first
control), a button is pressed with Enter or Space, a radio moves with the
arrow keys, a checkbox toggles with Space. Each test then reads text the page
drew from Valkey's answer, and the words the aria-live region announced.
"""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

from tests.e2e.pages import WIDGETS, region, wait_until_live


def open_widget(page: Page, widget: str) -> Locator:
    page.goto(WIDGETS[widget][0])
    wait_until_live(page)
    return region(page, widget)


def tab_to(page: Page, widget: Locator, target: Locator) -> None:
    """Focus the widget's first control, then press Tab until `target` has focus."""
    widget.locator("button:not([disabled]), input").first.focus()
    for _ in range(40):
        if target.evaluate("(node) => node === document.activeElement"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("Tab never reached the control")
    # keyboard focus is visible: the focus ring is drawn
    outline = target.evaluate("(node) => getComputedStyle(node).outlineStyle")
    assert outline not in ("", "none"), outline


def press(page: Page, widget: Locator, name: str, key: str = "Enter") -> None:
    tab_to(page, widget, widget.get_by_role("button", name=name, exact=True))
    page.keyboard.press(key)


def announced(widget: Locator) -> Locator:
    return widget.locator('[data-role="announce"]')


def test_the_stepper_moves_forward_and_back_by_keyboard(page: Page) -> None:
    widget = open_widget(page, "enqueue-stepper")
    readout = widget.locator('[data-role="readout"]')
    expect(readout).to_contain_text("Before move 1")
    press(page, widget, "Next move", "Enter")
    expect(readout).to_contain_text("After move 1 of 4")
    press(page, widget, "Next move", " ")
    expect(readout).to_contain_text("After move 2 of 4")
    expect(announced(widget)).to_contain_text("Move 2 of 4")
    press(page, widget, "Previous move", "Enter")
    expect(readout).to_contain_text("After move 1 of 4")
    tab_to(page, widget, widget.get_by_label("Use a non-JOB id"))
    page.keyboard.press(" ")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("not JOB-prefixed")
    press(page, widget, "Run atomically", "Enter")
    expect(announced(widget)).to_contain_text("EMQKIND job id must be JOB-namespaced")


def test_the_fan_in_counts_down_and_announces_it_by_keyboard(page: Page) -> None:
    widget = open_widget(page, "fanin")
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(page, widget, "Complete child", "Enter")
    expect(counter).to_have_text("2")
    expect(announced(widget)).to_contain_text(":dependencies fell from 3 to 2; the parent is still held")
    press(page, widget, "Complete child", " ")
    expect(counter).to_have_text("1")
    press(page, widget, "Redeliver last completion", "Enter")
    expect(announced(widget)).to_contain_text("did not move")
    expect(counter).to_have_text("1")


def test_the_results_reader_completes_fails_and_reads_by_keyboard(page: Page) -> None:
    widget = open_widget(page, "results")
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(page, widget, "Complete child", "Enter")
    expect(counter).to_have_text("2")
    press(page, widget, "Fail child at the cap", " ")
    expect(counter).to_have_text("1")
    press(page, widget, "Read the results", "Enter")
    expect(widget.locator('[data-role="read-values"]')).to_have_text("{JOBleg1: subtotal 40.00}")
    expect(announced(widget)).to_contain_text("no key changed (DUMPs equal)")


def test_the_outbox_completes_and_pumps_by_keyboard(page: Page) -> None:
    widget = open_widget(page, "outbox")
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(page, widget, "Complete child", "Enter")
    expect(widget.locator('[data-role="outbox-mail"]')).to_contain_text("completed JOBmail1")
    expect(counter).to_have_text("3")
    press(page, widget, "Pump tick", " ")
    expect(counter).to_have_text("2")
    expect(announced(widget)).to_contain_text(":dependencies fell from 3 to 2")


def test_the_failure_policy_radio_and_buttons_work_by_keyboard(page: Page) -> None:
    widget = open_widget(page, "failure-policy")
    fail_parent = widget.get_by_label("fail the parent")
    expect(fail_parent).to_be_checked()
    tab_to(page, widget, fail_parent)
    page.keyboard.press("ArrowRight")  # a radio group moves with the arrows
    expect(widget.get_by_label("ignore the dependency")).to_be_checked()
    expect(widget.locator('[data-role="readout"]')).to_contain_text("parent_policy id (ignore the dependency)")
    press(page, widget, "Fail child at the cap", "Enter")
    expect(widget.locator('[data-role="ignored"]')).to_contain_text("JOBchild1 → card declined")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("2")
    expect(announced(widget)).to_contain_text("parent_policy id")


def test_the_ledger_steps_and_picks_a_flow_by_keyboard(page: Page) -> None:
    widget = open_widget(page, "ledger")
    readout = widget.locator('[data-role="readout"]')
    expect(readout).to_contain_text("Before flow 1")
    press(page, widget, "Next flow", "Enter")
    expect(readout).to_contain_text("Flow 1 of 4 added one at a time")
    press(page, widget, "Next flow", " ")
    expect(readout).to_contain_text("Flow 2 of 4 added one at a time")
    press(page, widget, "Previous flow", "Enter")
    expect(readout).to_contain_text("Flow 1 of 4 added one at a time")
    press(page, widget, "Flow 1", " ")
    expect(widget.get_by_role("button", name="Flow 1", exact=True)).to_have_attribute("aria-pressed", "true")
    expect(widget.locator('[data-role="picked"]')).to_contain_text(re.compile(r"Flow 1 \(same-queue\)"))


def test_the_panels_open_and_close_from_the_keyboard(page: Page) -> None:
    widget = open_widget(page, "fanin")
    summary = widget.locator("details.raw-keys > summary")
    tab_to(page, widget, summary)
    page.keyboard.press("Enter")
    expect(widget.locator("details.raw-keys")).to_have_attribute("open", "")
    expect(widget.locator('[data-role="keys"] tr[data-key$=":job:JOBparent:dependencies"]')).to_be_visible()
