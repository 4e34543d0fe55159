"""The failure policy in Chromium on a real Valkey: two pages of one sandbox
show each arm as one of them runs it, the radio follows the choice Valkey
keeps, and without JavaScript the recorded run shows both arms."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.e2e.branch_helpers import key, open_widget, outcome, press
from tests.e2e.conftest import Site
from tests.e2e.dive03 import queue
from tests.e2e.pages import region

W = "failure-policy"


def two_pages(context: BrowserContext) -> tuple[Locator, Locator, Page]:
    """The widget on two pages of one sandbox (one browser context: one cookie)."""
    first = context.new_page()
    one = open_widget(first, W)
    return one, open_widget(context.new_page(), W), first


def test_fail_the_parent_fails_it_into_dead_and_a_sibling_does_not_release_it(context: BrowserContext,
                                                                              site: Site) -> None:
    one, two, page = two_pages(context)
    r, home = site.redis(), queue(site, page, "failure-policy")
    expect(two.get_by_role("radio", name="fail the parent")).to_be_checked()
    press(one, "Fail child at the cap")
    expect(two.locator('[data-role="parent-state"]')).to_have_text("failed")
    expect(two.locator('[data-role="parent-sets"]')).to_have_text("in dead")
    assert r.hget(key(home, "job:JOBparent"), "state") == "failed"
    assert r.zscore(key(home, "dead"), "JOBparent") is not None
    expect(outcome(two)).to_contain_text("Its row's parent_policy fp: the parent was failed and moved to dead")
    press(two, "Complete child")
    expect(one.locator('[data-role="dependencies"]')).to_have_text("2")
    assert r.get(key(home, "job:JOBparent:dependencies")) == "2"
    expect(one.locator('[data-role="parent-state"]')).to_have_text("failed")
    expect(one.locator('[data-role="readout"]')).to_contain_text("nothing will release it")


def test_ignore_the_dependency_is_picked_on_one_page_and_kept_by_valkey(context: BrowserContext, site: Site) -> None:
    one, two, page = two_pages(context)
    r, home = site.redis(), queue(site, page, "failure-policy")
    one.get_by_role("radio", name="ignore the dependency").check()
    # the other page follows the choice Valkey keeps
    expect(two.get_by_role("radio", name="ignore the dependency")).to_be_checked()
    expect(two.locator('[data-role="readout"]')).to_contain_text("The child rows say parent_policy id")
    assert {r.hget(key(home, f"job:JOBchild{n}"), "parent_policy") for n in (1, 2, 3)} == {"id"}
    for expected in ("2", "1", "0"):
        press(two, "Fail child at the cap")
        expect(one.locator('[data-role="dependencies"]')).to_have_text(expected)
    expect(one.locator('[data-role="ignored"]')).to_contain_text("JOBchild3 → card declined")
    assert r.hgetall(key(home, "job:JOBparent:ignored")) == {f"JOBchild{n}": "card declined" for n in (1, 2, 3)}
    expect(one.locator('[data-role="parent-state"]')).to_have_text("pending")
    press(one, "Reset")
    expect(two.locator('[data-role="dependencies"]')).to_have_text("3")
    page.reload()
    expect(region(page, W).get_by_role("radio", name="ignore the dependency")).to_be_checked()
    assert r.hget(key(home, "job:JOBchild1"), "parent_policy") == "id"


def test_a_failure_with_attempts_left_parks_the_child_in_schedule(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    home = queue(site, page, "failure-policy")
    button = widget.get_by_role("button", name=re.compile("attempts left"))
    expect(button).to_have_text("Fail child with attempts left")
    button.click()
    expect(widget.locator('[data-role="set-schedule"]').first).to_have_text("JOBchild1")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    assert site.redis().zrange(key(home, "schedule"), 0, -1) == ["JOBchild1"]
    expect(outcome(widget)).to_contain_text("the parent's keys did not move")


@pytest.fixture
def still_page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def test_without_javascript_the_widget_shows_the_arm_valkey_ran(still_page: Page, site: Site) -> None:
    """The page without JavaScript is the live widget's drawing: after a death at the cap under
    fail the parent (posted as a tool would), the parent shows failed, as the state API reads it."""
    still_page.goto("/flows/cross-queue")
    context = still_page.context
    assert context.request.post(f"{site.url}/api/widgets/{W}/reset", data={}, headers={"Origin": site.url}).ok
    assert context.request.post(f"{site.url}/api/widgets/{W}/fail-child", data={}, headers={"Origin": site.url}).ok
    state = context.request.get(f"{site.url}/api/widgets/{W}/state").json()["snapshot"]
    assert state["picture"]["parent"]["state"] == "failed"
    still_page.goto("/flows/cross-queue")
    widget = region(still_page, W)
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("failed")
    expect(widget.locator('[data-role="readout"]')).to_have_text(state["readout"])


def test_a_cross_queue_death_waits_in_the_outbox_until_the_pump_applies_it_on_the_parents_slot(
        page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    r, home, mail = site.redis(), queue(site, page, "failure-policy"), queue(site, page, "failure-policy.mail")
    press(widget, "Fail the cross-queue child at the cap")
    expect(widget.locator('[data-role="linked-outbox"]')).to_have_text(
        "failed JOBremote → JOBlinked (policy fp), waiting for the Pump")
    expect(widget.locator('[data-role="linked-state"]')).to_have_text("awaiting_children")
    assert r.llen(key(mail, "flow:outbox")) == 1
    press(widget, "Deliver with the Pump")
    expect(widget.locator('[data-role="linked-state"]')).to_have_text("failed")
    expect(widget.locator('[data-role="linked-outbox"]')).to_have_text("mail's flow:outbox is empty")
    assert r.hget(key(home, "job:JOBlinked"), "state") == "failed" and r.llen(key(mail, "flow:outbox")) == 0


def test_the_radio_moves_with_the_arrow_keys_and_a_button_presses_with_enter(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    fail_parent = widget.get_by_role("radio", name="fail the parent")
    expect(fail_parent).to_be_checked()
    fail_parent.focus()
    page.keyboard.press("ArrowRight")  # a radio group moves with the arrows, and the flows land again
    expect(widget.get_by_role("radio", name="ignore the dependency")).to_be_checked()
    expect(widget.locator('[data-role="readout"]')).to_contain_text("parent_policy id (ignore the dependency)")
    widget.get_by_role("button", name="Fail child at the cap").focus()
    page.keyboard.press("Enter")
    expect(widget.locator('[data-role="ignored"]')).to_contain_text("JOBchild1 → card declined")
    expect(widget.locator('[data-role="announce"]')).to_contain_text("the error went to the parent's :ignored")
    assert site.redis().hget(key(queue(site, page, "failure-policy"), "job:JOBparent:ignored"), "JOBchild1") == \
        "card declined"
