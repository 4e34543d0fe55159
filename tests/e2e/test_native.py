"""Dive 01's native refusal in Chromium: four lines, Valkey's real replies."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region
from tests.e2e.test_keyboard import announced, open_widget, press


def test_the_four_buttons_show_the_line_sent_and_valkeys_reply(page: Page, site: Site) -> None:
    page.goto(WIDGETS["native"][0])
    widget = region(page, "native")
    line, reply = widget.locator('[data-role="line"]'), widget.locator('[data-role="reply"]')
    verdict = widget.locator('[data-role="verdict"]')
    expect(widget.locator('[data-role="child-state"]')).to_have_text("active")

    widget.get_by_role("button", name="Send as EMQ.COMPLETE", exact=True).click()
    expect(line).to_contain_text("EMQ.COMPLETE 5 emq:{")
    expect(reply).to_have_text("(error) EMQSTATE complete flow not native")
    expect(verdict).to_contain_text("Nothing changed")

    widget.get_by_role("button", name="Send the flat form", exact=True).click()
    expect(line).to_contain_text("EMQ.COMPLETE 2 emq:{")
    expect(line).not_to_contain_text("EMQ.COMPLETE 5")
    expect(reply).to_have_text("(error) EMQSTATE complete flow not native")
    expect(verdict).to_contain_text("Nothing changed")

    widget.get_by_role("button", name="Send as a script", exact=True).click()
    expect(line).to_contain_text("EVALSHA ")
    expect(reply).to_have_text("(integer) 1")
    expect(verdict).to_contain_text("Changed:")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="keys-after"]')).not_to_contain_text("job:JOBchild")

    widget.get_by_role("button", name="Complete a flat job natively", exact=True).click()
    expect(line).to_contain_text(":job:JOBflat JOBflat 1 emq:{")
    expect(reply).to_have_text("(integer) 1")
    expect(widget.locator('[data-role="flat-state"]')).to_have_text("no row")
    # what the page says is what Valkey holds: this sandbox's flat job row is gone
    row_key = next(word for word in line.inner_text().split() if word.endswith(":job:JOBflat"))
    with site.redis() as valkey:
        assert valkey.exists(row_key) == 0

    widget.get_by_role("button", name="Reset", exact=True).click()
    expect(widget.locator('[data-role="flat-state"]')).to_have_text("active")


def test_the_native_line_is_sent_and_its_refusal_announced_from_the_keyboard(page: Page) -> None:
    widget = open_widget(page, "native")
    press(page, widget, "Send as EMQ.COMPLETE")
    expect(announced(widget)).to_contain_text("EMQSTATE complete flow not native")
    expect(widget.locator('[data-role="verdict"]')).to_contain_text("Nothing changed")


def test_a_deep_link_replays_the_native_tour_on_valkey(page: Page) -> None:
    page.goto(WIDGETS["native"][0] + "#native-step=3")
    widget = region(page, "native")
    # steps 1-3: the two refusals, then the script line, which completes the child
    expect(widget.locator('[data-role="line"]')).to_contain_text("EVALSHA ")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
