"""The cross-queue outbox in Chromium on a real Valkey: two pages of one
sandbox show what one of them did, and every word checked on the page is
checked against the keys Valkey holds."""

from __future__ import annotations

import json
import re

from playwright.sync_api import BrowserContext, Locator, Page, expect

from server.emq import keyspace, pump
from tests.e2e.branch_helpers import key, open_widget, outcome, press
from tests.e2e.conftest import Site
from tests.e2e.dive03 import queue

W = "outbox"


def two_pages(context: BrowserContext, hash_: str = "") -> tuple[Locator, Locator, Page]:
    """The widget on two pages of one sandbox (one browser context: one cookie)."""
    first = context.new_page()
    one = open_widget(first, W, hash_)
    two = open_widget(context.new_page(), W)
    return one, two, first


def counter(widget: Locator) -> Locator:
    return widget.locator('[data-role="dependencies"]')


def test_a_completion_waits_in_its_outbox_until_a_tick_on_the_other_page_delivers_it(context: BrowserContext,
                                                                                      site: Site) -> None:
    one, two, page = two_pages(context)
    r, orders, mail = site.redis(), queue(site, page, "outbox.orders"), queue(site, page, "outbox.mail")
    expect(counter(two)).to_have_text("3")
    press(one, "Complete child")
    expect(two.locator('[data-role="outbox-mail"]')).to_have_text(
        "completed JOBmail1 → JOBparent, waiting for the Pump")
    [entry] = [pump.decode_entry(e) for e in r.lrange(key(mail, "flow:outbox"), 0, -1)]
    assert (entry.child, entry.parent_queue) == ("JOBmail1", orders)
    expect(counter(two)).to_have_text(r.get(key(orders, "job:JOBparent:dependencies")) or "")
    press(two, "Pump tick")
    expect(counter(one)).to_have_text("2")
    assert r.get(key(orders, "job:JOBparent:dependencies")) == "2"
    expect(one.locator('[data-role="outbox-mail"]')).to_have_text("empty")
    expect(one.locator('[data-role="processed"]')).to_have_text(":processed: JOBmail1")
    assert r.hkeys(key(orders, "job:JOBparent:processed")) == ["JOBmail1"]
    expect(outcome(one)).to_contain_text("Pump tick — outbox.mail: 1 delivered, 1 trimmed.")


def test_a_crash_before_trim_then_a_tick_delivers_one_entry_twice_and_counts_it_once(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    r, orders, mail = site.redis(), queue(site, page, "outbox.orders"), queue(site, page, "outbox.mail")
    press(widget, "Complete child")
    expect(widget.locator('[data-role="outbox-mail"]')).to_contain_text("JOBmail1")
    press(widget, "Crash before trim")
    expect(counter(widget)).to_have_text("2")
    expect(widget.locator('[data-role="outbox-mail"]')).to_have_text(
        "completed JOBmail1 → JOBparent, delivered already, not yet trimmed")
    assert r.llen(key(mail, "flow:outbox")) == 1
    press(widget, "Pump tick")
    expect(outcome(widget)).to_contain_text("1 delivered again, a duplicate the HSETNX guard refused, 1 trimmed")
    expect(counter(widget)).to_have_text("2")
    assert r.get(key(orders, "job:JOBparent:dependencies")) == "2" and r.llen(key(mail, "flow:outbox")) == 0


def test_a_poison_head_blocks_until_the_aged_tick_moves_it_to_the_poison_list(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    r, mail = site.redis(), queue(site, page, "outbox.mail")
    press(widget, "Add a poison entry")
    expect(outcome(widget)).to_contain_text("not EchoMQ")
    press(widget, "Complete child")
    entries = widget.locator('[data-role="outbox-mail"] li')
    expect(entries).to_have_count(2)
    expect(entries.first).to_contain_text("poison (it does not decode)")
    press(widget, "Pump tick")
    expect(outcome(widget)).to_contain_text("stopped at a poison entry")
    for n in ("1", "2"):
        press(widget, "Aged pump tick")
        expect(widget.locator('[data-role="head-mail"]')).to_have_text(f"head blocked for {n} of 2 aged ticks")
        assert r.hget(key(mail, "flow:outbox:head"), "count") == n
    press(widget, "Aged pump tick")
    expect(outcome(widget)).to_contain_text("went to flow:outbox:poison")
    expect(widget.locator('[data-role="poison-mail"]')).to_contain_text("poison (it does not decode)")
    expect(counter(widget)).to_have_text("2")
    assert r.llen(key(mail, "flow:outbox:poison")) == 1 and r.llen(key(mail, "flow:outbox")) == 0


def test_an_entry_naming_another_sandbox_shows_as_refused_and_is_never_delivered(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    r, mail = site.redis(), queue(site, page, "outbox.mail")
    other = "s9z9z9z9z9z.outbox.orders"
    crafted = json.dumps({"kind": "completed", "child": "JOBmail1", "child_queue": mail, "value": "pwned",
                          "parent": "JOBparent", "parent_queue": other, "policy": "fp"})
    crafted = crafted.replace(f'"{other}"', '"\\u0073' + other[1:] + '"')  # the escape a raw-text check misses
    assert other not in crafted and pump.decode_entry(crafted).parent_queue == other
    r.rpush(key(mail, "flow:outbox"), crafted)
    press(widget, "Pump tick")
    expect(widget.locator('[data-role="outbox-mail"]')).to_have_text(
        "refused: completed JOBmail1 → JOBparent, but its parent queue is outside your sandbox")
    expect(outcome(widget)).to_contain_text("stopped at an entry it refused (its parent queue is outside your sandbox)")
    assert not r.exists(key(other, "job:JOBparent:processed")) and r.llen(key(mail, "flow:outbox")) == 1


def test_the_key_panel_shows_one_table_per_queue_each_captioned_with_its_own_slot(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    captions = widget.locator("table.keys caption")
    expect(captions).to_have_count(3)
    texts = [captions.nth(i).text_content() or "" for i in range(3)]
    parts = ["outbox.orders", "outbox.mail", "outbox.billing"]
    for text, part in zip(texts, parts, strict=True):
        assert text.startswith(f"queue {part} · hash slot {keyspace.queue_slot(queue(site, page, part))} ·"), text
    expect(widget.get_by_role("button", name="Try it as one script")).to_be_hidden()  # one server: no slots to cross


def test_the_outbox_step_link_replays_the_story_to_a_released_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, W, "#outbox-step=7")
    expect(outcome(widget)).to_contain_text(re.compile(r"^Step 7 of 7 \(Past its bound"))
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    orders = queue(site, page, "outbox.orders")
    assert site.redis().hget(key(orders, "job:JOBparent"), "state") == "pending"


def test_the_buttons_press_with_enter_and_space(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    widget.get_by_role("button", name="Complete child", exact=True).focus()
    page.keyboard.press("Enter")
    expect(widget.locator('[data-role="outbox-mail"]')).to_contain_text("completed JOBmail1")
    widget.get_by_role("button", name="Pump tick", exact=True).focus()
    page.keyboard.press(" ")
    expect(counter(widget)).to_have_text("2")
    expect(widget.locator('[data-role="announce"]')).to_contain_text("Pump tick — outbox.mail: 1 delivered")
    assert site.redis().get(key(queue(site, page, "outbox.orders"), "job:JOBparent:dependencies")) == "2"
