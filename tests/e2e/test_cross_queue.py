"""Dive 03 in Chromium: the cross-queue outbox and the failure policy on a real Valkey."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

DIVE = "/flows/cross-queue"


def outbox(page: Page):
    return page.get_by_role("region", name=re.compile("outbox"))


def policy(page: Page):
    return page.get_by_role("region", name=re.compile("failure policy"))


def press(widget, label: str) -> None:
    widget.get_by_role("button", name=label, exact=True).click()


def test_a_completion_waits_in_the_outbox_until_a_pump_tick_delivers_it(page: Page) -> None:
    page.goto(DIVE)
    widget = outbox(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(widget, "Complete child")
    expect(widget.locator('[data-role="outbox-mail"]')).to_contain_text("completed JOBmail1 → JOBparent")
    expect(counter).to_have_text("3")
    press(widget, "Pump tick")
    expect(counter).to_have_text("2")
    expect(widget.locator('[data-role="outbox-mail"]')).to_have_text("empty")
    expect(widget.locator('[data-role="processed"]')).to_contain_text("JOBmail1")


def test_crash_before_trim_then_a_tick_delivers_one_entry_twice_and_decrements_once(page: Page) -> None:
    page.goto(DIVE)
    widget = outbox(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(widget, "Complete child")
    expect(widget.locator('[data-role="outbox-mail"]')).to_contain_text("JOBmail1")
    press(widget, "Crash before trim")
    expect(counter).to_have_text("2")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("still in the outbox")
    expect(widget.locator('[data-role="outbox-mail"]')).to_contain_text("completed JOBmail1")
    press(widget, "Pump tick")
    outcome = widget.locator('[data-role="outcome"]')
    expect(outcome).to_contain_text("1 entry delivered again: the guard refused it (duplicate)")
    expect(outcome).to_contain_text(":dependencies stayed at 2")
    expect(counter).to_have_text("2")
    expect(widget.locator('[data-role="outbox-mail"]')).to_have_text("empty")


def test_a_poison_head_blocks_the_outbox_until_the_aged_tick_sets_it_aside(page: Page) -> None:
    page.goto(DIVE)
    widget = outbox(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(widget, "Add a poison entry")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("teaching action")
    press(widget, "Complete child")
    mail = widget.locator('[data-role="outbox-mail"] li')
    expect(mail).to_have_count(2)
    expect(mail.first).to_contain_text("poison")
    press(widget, "Pump tick")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("the head is blocked")
    expect(counter).to_have_text("3")
    for n in ("1", "2"):
        press(widget, "Aged pump tick")
        expect(widget.locator('[data-role="head-mail"]')).to_contain_text(f"{n} of 2")
    press(widget, "Aged pump tick")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("moved to flow:outbox:poison")
    expect(widget.locator('[data-role="poison-mail"]')).to_contain_text("poison:")
    expect(counter).to_have_text("2")
    expect(widget.locator('[data-role="outbox-mail"]')).to_have_text("empty")


def test_the_key_panel_shows_one_table_per_queue_each_with_its_own_hash_slot(page: Page) -> None:
    page.goto(DIVE)
    widget = outbox(page)
    captions = widget.locator("table.keys caption")
    expect(captions).to_have_count(3)
    texts = [captions.nth(i).text_content() or "" for i in range(3)]
    slots = {re.search(r"hash slot (\d+)", t).group(1) for t in texts}  # type: ignore[union-attr]
    assert len(slots) == 3
    assert [t.split()[1].rsplit(".", 1)[1] for t in texts] == ["orders", "mail", "billing"]


def test_the_outbox_step_deep_link_replays_the_story_to_a_released_parent(page: Page) -> None:
    page.goto(DIVE + "#outbox-step=11")
    widget = outbox(page)
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Step 11 of 11")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("0")


def test_fail_the_parent_leaves_it_failed_in_dead_while_its_siblings_complete(page: Page) -> None:
    page.goto(DIVE)
    widget = policy(page)
    expect(widget.get_by_label("fail the parent")).to_be_checked()
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    press(widget, "Fail child at the cap")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("failed")
    expect(widget.locator('[data-role="parent-sets"]')).to_have_text("in dead")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("parent_policy fp")
    press(widget, "Complete child")
    press(widget, "Complete child")
    expect(counter).to_have_text("1")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("failed")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("nothing will release it")


def test_ignore_the_dependency_records_the_error_and_releases_the_parent(page: Page) -> None:
    page.goto(DIVE)
    widget = policy(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    widget.get_by_label("ignore the dependency").check()
    expect(widget.locator('[data-role="readout"]')).to_contain_text("parent_policy id (ignore the dependency)")
    for expected in ("2", "1", "0"):
        press(widget, "Fail child at the cap")
        expect(counter).to_have_text(expected)
    expect(widget.locator('[data-role="ignored"]')).to_contain_text("JOBchild3 → card declined")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="readout"]')).to_contain_text(":ignored holds 3")
    page.reload()
    expect(policy(page).get_by_label("ignore the dependency")).to_be_checked()
