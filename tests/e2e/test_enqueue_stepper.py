"""Dive 01's @enqueue_flow stepper in Chromium, on two pages of one sandbox.

Page A presses; page B, which nobody touches, paints the same keys from the
stream. What the pages say is checked against Valkey itself: the sandbox is
found by the widget's version (`data-ver` is the `ver` of its lab state).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region, wait_until_live

DIVE = WIDGETS["enqueue-stepper"][0]


@pytest.fixture
def pages(context: BrowserContext) -> Iterator[tuple[Page, Page]]:
    """Two pages of one sandbox (one browser context), both live on the dive."""
    pair = (context.new_page(), context.new_page())
    for page in pair:
        page.goto(DIVE)
        wait_until_live(page)
    yield pair
    for page in pair:
        page.close()


def queue_of(site: Site, widget: Locator) -> str:
    """The stepper's queue in Valkey, found by the version the page painted."""
    ver = widget.get_attribute("data-ver")
    with site.redis() as valkey:
        found = [k for k in valkey.scan_iter("lab:{*.stepper}:state") if valkey.hget(k, "ver") == ver]
    assert len(found) == 1, (ver, found)
    return found[0][len("lab:{"):-len("}:state")]


def key_row(widget: Locator, suffix: str) -> Locator:
    return widget.locator(f"[data-role=keys] tr[data-key$='{suffix}']")


def test_each_move_shows_on_both_pages_the_keys_valkey_holds_after_it(pages: tuple[Page, Page], site: Site) -> None:
    a, b = (region(page, "enqueue-stepper") for page in pages)
    a.get_by_role("button", name="Reset", exact=True).click()
    a.get_by_label("Use a non-JOB id").set_checked(False)
    for widget in (a, b):
        expect(widget.locator('[data-role="readout"]')).to_have_text("Before move 1: the stepper's queue holds no key.")
    a.get_by_role("button", name="Next move").click()
    expect(b.locator('[data-role="readout"]')).to_contain_text("After move 1 of 4 (gate every id)")
    a.get_by_role("button", name="Next move").click()
    for widget in (a, b):
        expect(key_row(widget, ":job:JOBchild1")).to_contain_text("state = pending")
        expect(key_row(widget, ":pending")).to_contain_text("JOBchild2")
        expect(key_row(widget, ":job:JOBparent")).to_have_count(0)
    a.get_by_role("button", name="Next move").click()
    a.get_by_role("button", name="Next move").click()
    for widget in (a, b):
        expect(widget.locator('[data-role="readout"]')).to_contain_text("After move 4 of 4 (set the counter)")
        expect(widget.locator('[data-role="dependencies"]')).to_have_text("2")
    expect(a.locator(".stepper-listing .line.current").first).to_be_visible()
    expect(a.get_by_role("button", name="Next move")).to_be_disabled()
    queue = queue_of(site, b)
    with site.redis() as valkey:
        assert valkey.get(f"emq:{{{queue}}}:job:JOBparent:dependencies") == "2"
        assert valkey.hget(f"emq:{{{queue}}}:job:JOBparent", "state") == "awaiting_children"
    a.get_by_role("button", name="Previous move").click()
    for widget in (a, b):
        expect(widget.locator('[data-role="readout"]')).to_contain_text("After move 3 of 4 (hold the parent)")
        expect(key_row(widget, ":dependencies")).to_have_count(0)
    with site.redis() as valkey:
        assert valkey.exists(f"emq:{{{queue}}}:job:JOBparent:dependencies") == 0


def test_a_non_job_id_is_refused_with_emqkind_and_the_choice_outlives_reset(
    pages: tuple[Page, Page], site: Site
) -> None:
    a, b = (region(page, "enqueue-stepper") for page in pages)
    a.get_by_role("button", name="Reset", exact=True).click()
    a.get_by_label("Use a non-JOB id").check()
    expect(b.get_by_label("Use a non-JOB id")).to_be_checked()
    expect(a.locator('[data-role="outcome"]')).to_contain_text("'child2', not JOB-prefixed")
    a.get_by_role("button", name="Run atomically").click()
    for widget in (a, b):
        expect(widget.locator('[data-role="readout"]')).to_have_text(
            "Refused in move 1 (gate every id) with EMQKIND job id must be JOB-namespaced: "
            "the queue was emptied for the run and the script wrote nothing, the stepper's queue holds no key.")
        expect(widget.locator('[data-role="keys"]')).to_contain_text("no keys")
    expect(b.locator('[data-role="outcome"]')).to_contain_text("EMQKIND job id must be JOB-namespaced")
    queue = queue_of(site, a)
    with site.redis() as valkey:
        assert list(valkey.scan_iter(f"emq:{{{queue}}}:*")) == []
        assert valkey.hget(f"lab:{{{queue}}}:state", "refused") == "EMQKIND job id must be JOB-namespaced"
    b.get_by_role("button", name="Reset", exact=True).click()
    expect(a.locator('[data-role="readout"]')).to_contain_text("Before move 1")
    for widget in (a, b):
        expect(widget.get_by_label("Use a non-JOB id")).to_be_checked()


def test_a_deep_link_opens_the_stepper_at_that_move_on_valkey(context: BrowserContext, site: Site) -> None:
    linked = context.new_page()
    linked.goto(DIVE + "#step=3")
    widget = region(linked, "enqueue-stepper")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("After move 3 of 4 (hold the parent)")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Step 3 of 7")
    expect(widget.locator(".moves li[aria-current=step]")).to_have_text("Move 3 — hold the parent")
    expect(key_row(widget, ":job:JOBparent")).to_contain_text("awaiting_children")
    other = context.new_page()
    other.goto(DIVE)
    expect(region(other, "enqueue-stepper").locator('[data-role="readout"]')).to_contain_text("After move 3 of 4")
    queue = queue_of(site, widget)
    with site.redis() as valkey:
        assert valkey.hget(f"lab:{{{queue}}}:state", "move") == "3"
        assert valkey.hget(f"emq:{{{queue}}}:job:JOBparent", "state") == "awaiting_children"


def test_a_refused_run_says_the_queue_was_emptied_for_it_and_the_feedback_for_five_does_too(
        page: Page, site: Site) -> None:
    """Issue 41, item 13: the refused run emptied a queue that held keys, then said "nothing
    was written", and the feedback for 5 said the queue "stays empty"."""
    page.goto(DIVE)
    wait_until_live(page)
    widget = region(page, "enqueue-stepper")
    widget.get_by_role("button", name="Reset", exact=True).click()
    widget.get_by_role("button", name="Next move").click()
    widget.get_by_role("button", name="Next move").click()  # the children landed: the queue holds keys
    expect(widget.locator('[data-role="readout"]')).to_contain_text("After move 2 of 4")
    expect(key_row(widget, ":pending")).to_have_count(1)
    widget.get_by_label("Use a non-JOB id").check()
    box = widget.locator('[data-role="predict"] fieldset[data-question="keys-after-atomic-non-job"]')
    box.locator('input[type="number"]').fill("5")
    widget.get_by_role("button", name="Run atomically").click()
    verdict = widget.locator('[data-role="outcome"] .verdict')
    expect(verdict).to_contain_text("Not quite: you said 5; Valkey holds 0 keys in the stepper's queue.")
    expect(verdict).to_contain_text("the queue, emptied for the run, gets no key")
    expect(verdict).not_to_contain_text("stays empty")
    expect(widget.locator('[data-role="readout"]')).to_contain_text(
        "the queue was emptied for the run and the script wrote nothing")
    expect(widget.locator('[data-role="keys"]')).to_contain_text("no keys")
    with site.redis() as valkey:
        assert list(valkey.scan_iter(f"emq:{{{queue_of(site, widget)}}}:*")) == []
