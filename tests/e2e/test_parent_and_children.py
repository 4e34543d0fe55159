"""Dive 01 as a learner walks it in Chromium, read back from Valkey: the
atomic add, move by move, then the fan-in counting the children down to the
parent's release; each visitor in a sandbox of their own."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from tests.e2e.branch_helpers import key, press, queue_of
from tests.e2e.conftest import Site
from tests.e2e.pages import DIVES, WIDGETS, on_dive, region, wait_until_live

DIVE = DIVES[0]
STEPPER, FANIN = "enqueue-stepper", "fanin"


def test_the_first_dive_places_the_stepper_then_the_fan_in() -> None:
    widgets = on_dive(DIVE)
    assert widgets.index(STEPPER) < widgets.index(FANIN)


def test_each_move_of_the_add_leaves_in_valkey_the_keys_the_page_shows(page: Page, site: Site) -> None:
    page.goto(DIVE)
    wait_until_live(page)
    widget = region(page, STEPPER)
    press(widget, "Reset")
    readout = widget.locator('[data-role="readout"]')
    expect(readout).to_contain_text("Before move 1")
    q, r = queue_of(site, page, STEPPER), site.redis()
    held_after = (
        set(),  # move 1 checks every id and writes nothing
        {"job:JOBchild1", "job:JOBchild2", "pending"},  # the children, claimable
        {"job:JOBchild1", "job:JOBchild2", "pending", "job:JOBparent"},  # the held parent
        {"job:JOBchild1", "job:JOBchild2", "pending", "job:JOBparent", "job:JOBparent:dependencies"},
    )
    for move, keys in enumerate(held_after, 1):
        press(widget, "Next move")
        expect(readout).to_contain_text(f"After move {move} of {len(held_after)}")
        held = {k.removeprefix(key(q, "")) for k in r.scan_iter(match=key(q, "*"))}
        assert held == keys, move
        shown = widget.locator("[data-role=keys] tr[data-key]").evaluate_all("(rows) => rows.map((r) => r.dataset.key)")
        part = WIDGETS[STEPPER].widget.queue_parts[0]
        assert {k.removeprefix(key(part, "")) for k in shown} == keys, move
    assert r.hget(key(q, "job:JOBparent"), "state") == "awaiting_children"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "2"


def test_three_completions_count_dependencies_down_to_zero_and_release_the_parent(page: Page, site: Site) -> None:
    page.goto(DIVE)
    wait_until_live(page)
    widget = region(page, FANIN)
    counter = widget.locator('[data-role="dependencies"]')
    expect(counter).to_have_text("3")
    q, r = queue_of(site, page, FANIN), site.redis()
    for left in (2, 1, 0):
        press(widget, "Complete child")
        expect(counter).to_have_text(str(left))
        assert r.get(key(q, "job:JOBparent:dependencies")) == str(left)
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("3 of 3 children complete")
    assert r.hget(key(q, "job:JOBparent"), "state") == "pending"
    assert r.zrange(key(q, "pending"), 0, -1) == ["JOBparent"]
    assert len(r.hgetall(key(q, "job:JOBparent:processed"))) == 3


def test_two_visitors_act_in_sandboxes_of_their_own(browser: Browser, site: Site) -> None:
    first = browser.new_context(base_url=site.url)
    second = browser.new_context(base_url=site.url)
    try:
        a, b = first.new_page(), second.new_page()
        for page in (a, b):
            page.goto(DIVE)
            wait_until_live(page)
        press(region(a, FANIN), "Complete child")
        expect(region(a, FANIN).locator('[data-role="dependencies"]')).to_have_text("2")
        b.reload()
        wait_until_live(b)
        expect(region(b, FANIN).locator('[data-role="dependencies"]')).to_have_text("3")
        ours, theirs = site.sandbox_of(first), site.sandbox_of(second)
        assert ours != theirs
        r = site.redis()
        assert r.get(key(queue_of(site, a, FANIN), "job:JOBparent:dependencies")) == "2"
        assert r.get(key(queue_of(site, b, FANIN), "job:JOBparent:dependencies")) == "3"
    finally:
        first.close()
        second.close()


def test_a_visitor_outside_any_room_sees_no_room_banner(page: Page) -> None:
    page.goto(DIVE)
    wait_until_live(page)
    expect(page.locator('[data-role="room-banner"]')).to_be_hidden()
