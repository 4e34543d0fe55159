"""Dive 01's native refusal in Chromium: four real lines, Valkey's own replies,
on two pages of one sandbox.

Page A presses; page B, which nobody touches, paints the same line, reply and
keys from the stream. The pages' words are checked against Valkey itself: the
sandbox is found by the widget's version (`data-ver` is its lab state's `ver`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region, wait_until_live
from tests.e2e.test_keyboard import announced, open_widget, press

DIVE = WIDGETS["native"][0]
REFUSAL = "(error) EMQSTATE complete flow not native"


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
    """The widget's queue in Valkey, found by the version the page painted."""
    ver = widget.get_attribute("data-ver")
    with site.redis() as valkey:
        found = [k for k in valkey.scan_iter("lab:{*.native}:state") if valkey.hget(k, "ver") == ver]
    assert len(found) == 1, (ver, found)
    return found[0][len("lab:{"):-len("}:state")]


def role(widget: Locator, name: str) -> Locator:
    return widget.locator(f'[data-role="{name}"]')


def test_the_four_lines_show_valkeys_replies_on_both_pages(pages: tuple[Page, Page], site: Site) -> None:
    a, b = (region(page, "native") for page in pages)
    a.get_by_role("button", name="Reset", exact=True).click()
    for widget in (a, b):
        expect(role(widget, "child-state")).to_have_text("active")
        expect(role(widget, "flat-state")).to_have_text("active")

    a.get_by_role("button", name="Send as EMQ.COMPLETE", exact=True).click()
    for widget in (a, b):
        expect(role(widget, "line")).to_contain_text("EMQ.COMPLETE 5 emq:{native}:active emq:{native}:job:JOBchild")
        expect(role(widget, "reply")).to_have_text(REFUSAL)
        expect(role(widget, "verdict")).to_contain_text("Nothing changed")
    expect(a.locator('[data-role="outcome"]')).to_contain_text("every key is byte-for-byte as before")

    a.get_by_role("button", name="Send the flat form", exact=True).click()
    for widget in (a, b):
        expect(role(widget, "line")).to_have_text(
            "EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:JOBchild JOBchild 1 emq:{native}:")
        expect(role(widget, "reply")).to_have_text(REFUSAL)

    a.get_by_role("button", name="Send as a script", exact=True).click()
    for widget in (a, b):
        expect(role(widget, "line")).to_contain_text("EVALSHA ")
        expect(role(widget, "reply")).to_have_text("(integer) 1")
        expect(role(widget, "verdict")).to_contain_text("Changed:")
        expect(role(widget, "parent-state")).to_have_text("pending")
        expect(role(widget, "keys-after")).not_to_contain_text("job:JOBchild")
    queue = queue_of(site, b)
    with site.redis() as valkey:
        assert valkey.hget(f"emq:{{{queue}}}:job:JOBparent", "state") == "pending"
        assert valkey.exists(f"emq:{{{queue}}}:job:JOBchild") == 0

    a.get_by_role("button", name="Complete a flat job natively", exact=True).click()
    for widget in (a, b):
        expect(role(widget, "line")).to_contain_text(":job:JOBflat JOBflat 1 emq:{native}:")
        expect(role(widget, "reply")).to_have_text("(integer) 1")
        expect(role(widget, "flat-state")).to_have_text("no row")
        expect(widget.locator('[data-role="readout"]')).to_contain_text("metrics:completed count = 2")
    with site.redis() as valkey:
        assert valkey.exists(f"emq:{{{queue}}}:job:JOBflat") == 0
        assert valkey.hget(f"emq:{{{queue}}}:metrics:completed", "count") == "2"

    b.get_by_role("button", name="Reset", exact=True).click()
    expect(role(a, "flat-state")).to_have_text("active")


def test_the_native_line_is_sent_and_its_refusal_announced_from_the_keyboard(page: Page) -> None:
    widget = open_widget(page, "native")
    press(page, widget, "Send as EMQ.COMPLETE")
    expect(announced(widget)).to_contain_text("EMQSTATE complete flow not native")
    expect(role(widget, "verdict")).to_contain_text("Nothing changed")


def test_a_deep_link_replays_the_native_tour_on_valkey(context: BrowserContext, site: Site) -> None:
    linked = context.new_page()
    linked.goto(DIVE + "#native-step=3")
    widget = region(linked, "native")
    # steps 1-3: the two refusals, then the script line, which completes the child
    expect(role(widget, "line")).to_contain_text("EVALSHA ")
    expect(role(widget, "parent-state")).to_have_text("pending")
    other = context.new_page()
    other.goto(DIVE)
    expect(role(region(other, "native"), "reply")).to_have_text("(integer) 1")
    with site.redis() as valkey:
        assert valkey.hget(f"emq:{{{queue_of(site, widget)}}}:job:JOBparent", "state") == "pending"
