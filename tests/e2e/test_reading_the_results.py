"""Dive 'Reading the results' in Chromium: the three reads on a real Valkey."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

DIVE = "/flows/reading-the-results"


def reader(page: Page):
    return page.get_by_role("region", name=re.compile("results"))


def test_complete_fail_and_read_show_the_three_answers(page: Page) -> None:
    page.goto(DIVE)
    widget = reader(page)
    deps = widget.locator('[data-role="dependencies"]')
    expect(deps).to_have_text(":dependencies = 3")
    widget.get_by_role("button", name="Complete child").click()
    expect(deps).to_have_text(":dependencies = 2")
    widget.get_by_role("button", name="Fail child at the cap").click()
    expect(deps).to_have_text(":dependencies = 1")
    widget.get_by_role("button", name="Read the results").click()
    expect(widget.locator('[data-role="read-values"]')).to_have_text("{JOBleg1: subtotal 40.00}")
    expect(widget.locator('[data-role="read-dependencies"]')).to_have_text("1")
    expect(widget.locator('[data-role="read-ignored"]')).to_have_text("{JOBleg2: carrier API timed out}")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text(
        re.compile(r"the three reads wrote nothing: \d+ keys unchanged")
    )


def test_the_last_read_is_marked_stale_once_valkey_moves_on(page: Page) -> None:
    page.goto(DIVE)
    widget = reader(page)
    expect(widget.locator('[data-role="dependencies"]')).to_have_text(":dependencies = 3")
    widget.get_by_role("button", name="Read the results").click()
    expect(widget.locator('[data-role="read-dependencies"]')).to_have_text("3")
    widget.get_by_role("button", name="Complete child").click()
    expect(widget.locator('[data-role="read-note"]')).to_contain_text("read again")


def test_reset_lands_the_flow_again(page: Page) -> None:
    page.goto(DIVE)
    widget = reader(page)
    deps = widget.locator('[data-role="dependencies"]')
    expect(deps).to_have_text(":dependencies = 3")
    widget.get_by_role("button", name="Complete child").click()
    expect(deps).to_have_text(":dependencies = 2")
    widget.get_by_role("button", name="Reset").click()
    expect(deps).to_have_text(":dependencies = 3")
