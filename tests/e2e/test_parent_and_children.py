"""Dive 01 in Chromium: the stepper and the fan-in counter on a real Valkey."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import Site
from tests.e2e.rooms import fanin

DIVE = "/flows/parent-and-children"


def stepper(page: Page):
    return page.get_by_role("region", name=re.compile("@enqueue_flow"))


def test_three_completions_count_dependencies_down_to_zero_and_release_the_parent(page: Page) -> None:
    page.goto(DIVE)
    widget = fanin(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    for expected in ("2", "1", "0"):
        widget.get_by_role("button", name="Complete child").click()
        expect(counter).to_have_text(expected)
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("3 of 3 children complete")


def test_redelivering_the_last_completion_leaves_the_counter_where_it_was(page: Page) -> None:
    page.goto(DIVE)
    widget = fanin(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    widget.get_by_role("button", name="Complete child").click()
    expect(counter).to_have_text("2")
    widget.get_by_role("button", name="Redeliver last completion").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("did not move")
    expect(counter).to_have_text("2")


def test_reset_lands_the_fan_in_flow_again(page: Page) -> None:
    page.goto(DIVE)
    widget = fanin(page)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    widget.get_by_role("button", name="Complete child").click()
    expect(counter).to_have_text("2")
    widget.get_by_role("button", name="Reset").click()
    expect(counter).to_have_text("3")


def test_each_stepper_move_shows_the_keys_valkey_holds_after_it(page: Page) -> None:
    page.goto(DIVE)
    widget = stepper(page)
    keys = widget.locator('[data-role="keys"]')
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before move 1")
    expect(keys).to_contain_text("no keys")
    widget.get_by_role("button", name="Next move").click()  # move 1: the gate, no write
    expect(widget.locator('[data-role="readout"]')).to_contain_text("After move 1")
    expect(keys).to_contain_text("no keys")
    widget.get_by_role("button", name="Next move").click()  # move 2: the children
    expect(keys.locator("tr[data-key$=':job:JOBchild1']")).to_contain_text("state = pending")
    expect(keys.locator("tr[data-key$=':pending']")).to_contain_text("JOBchild2")
    expect(keys.locator("tr[data-key$=':job:JOBparent']")).to_have_count(0)
    widget.get_by_role("button", name="Next move").click()  # move 3: the held parent
    expect(keys.locator("tr[data-key$=':job:JOBparent']")).to_contain_text("awaiting_children")
    expect(keys.locator("tr[data-key$=':dependencies']")).to_have_count(0)
    widget.get_by_role("button", name="Next move").click()  # move 4: the counter
    expect(keys.locator("tr[data-key$=':job:JOBparent:dependencies']")).to_contain_text("2")
    expect(widget.locator(".stepper-listing .line.current").first).to_be_visible()
    widget.get_by_role("button", name="Previous move").click()
    expect(keys.locator("tr[data-key$=':dependencies']")).to_have_count(0)


def test_a_non_job_id_is_refused_with_emqkind_and_nothing_is_written(page: Page) -> None:
    page.goto(DIVE)
    widget = stepper(page)
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before move 1")
    widget.get_by_label("Use a non-JOB id").check()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("not JOB-prefixed")
    widget.get_by_role("button", name="Run atomically").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("EMQKIND job id must be JOB-namespaced")
    expect(widget.locator('[data-role="keys"]')).to_contain_text("no keys")


def test_two_browser_contexts_get_separate_sandboxes(browser, site: Site) -> None:
    first = browser.new_context(base_url=site.url)
    second = browser.new_context(base_url=site.url)
    try:
        a, b = first.new_page(), second.new_page()
        a.goto(DIVE)
        b.goto(DIVE)
        expect(fanin(a).locator('[data-role="dependencies"]')).to_have_text("3")
        expect(fanin(b).locator('[data-role="dependencies"]')).to_have_text("3")
        fanin(a).get_by_role("button", name="Complete child").click()
        expect(fanin(a).locator('[data-role="dependencies"]')).to_have_text("2")
        b.reload()
        expect(fanin(b).locator('[data-role="dependencies"]')).to_have_text("3")
        queue_a = fanin(a).locator("table.keys caption").first.text_content() or ""
        queue_b = fanin(b).locator("table.keys caption").first.text_content() or ""
        assert queue_a.split()[1] != queue_b.split()[1]
    finally:
        first.close()
        second.close()


def test_each_widget_is_the_one_region_its_name_finds(page: Page) -> None:
    page.goto(DIVE)
    expect(fanin(page)).to_have_count(1)
    expect(stepper(page)).to_have_count(1)
    expect(fanin(page)).to_be_visible()


def test_a_visitor_outside_any_room_sees_no_room_banner(page: Page) -> None:
    page.goto(DIVE)
    expect(fanin(page).locator('[data-role="dependencies"]')).to_have_text("3")
    expect(page.locator('[data-role="room-banner"]')).to_be_hidden()
