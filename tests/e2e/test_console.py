"""The console in Chromium: commands typed into the page run on Valkey, the
replies print as valkey-cli prints them, and a write repaints the widget of
that queue without a click there."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.console_lines import claim, complete_child
from tests.e2e.conftest import Site
from tests.e2e.pages import DIVES, WIDGETS, region, wait_until_live

FANIN = "fanin"
DIVE = WIDGETS[FANIN].dive


def console(page: Page) -> Locator:
    return page.get_by_role("region", name=re.compile("console"))


def transcript(page: Page) -> Locator:
    return console(page).get_by_role("log")


def type_and_enter(page: Page, command: str) -> None:
    box = console(page).get_by_label("Command", exact=True)
    box.fill(command)
    box.press("Enter")


def last_reply(page: Page) -> Locator:
    return transcript(page).locator(".console-reply").last


def test_after_reset_the_console_reads_three_and_complete_by_name_repaints_the_fan_in(page: Page) -> None:
    page.goto(DIVE)
    wait_until_live(page)
    fanin = region(page, FANIN)
    counter = fanin.locator('[data-role="dependencies"]')
    fanin.get_by_role("button", name="Reset").click()
    expect(counter).to_have_text("3")

    type_and_enter(page, "GET emq:{fanin}:job:JOBparent:dependencies")
    expect(last_reply(page)).to_have_text('"3"')

    type_and_enter(page, claim("fanin"))
    expect(last_reply(page)).to_have_text('1) "JOBchild1"\n2) (integer) 1')
    expect(fanin.locator('[data-role="set-active"]')).to_contain_text("JOBchild1")  # the claim, repainted

    line = complete_child("fanin", "JOBchild1", 1, "JOBparent", "done by hand")
    console(page).get_by_label("Command", exact=True).fill(line)
    console(page).get_by_role("button", name="Run", exact=True).click()
    expect(last_reply(page)).to_have_text("(integer) 1")
    # the fan-in repaints from the stream: nothing was clicked in its region
    expect(counter).to_have_text("2")
    # and the keyspace notifications of the console's write reach its effects log
    expect(fanin.locator('[data-role="effects"]')).to_contain_text("job:JOBparent:dependencies")

    type_and_enter(page, "GET emq:{fanin}:job:JOBparent:dependencies")
    expect(last_reply(page)).to_have_text('"2"')
    box = console(page).get_by_label("Command", exact=True)
    box.press("ArrowUp")
    expect(box).to_have_value("GET emq:{fanin}:job:JOBparent:dependencies")
    box.press("ArrowUp")
    expect(box).to_have_value(line)
    box.press("ArrowDown")
    box.press("ArrowDown")
    expect(box).to_have_value("")


def test_an_example_runs_with_one_click(page: Page) -> None:
    page.goto(DIVE)
    wait_until_live(page)  # the widgets landed (a first visit's stream lands them), so the row exists
    console(page).get_by_role("button", name="try: HGETALL emq:{fanin}:job:JOBparent").click()
    expect(transcript(page)).to_contain_text("HGETALL emq:{fanin}:job:JOBparent")
    expect(last_reply(page)).to_contain_text('1) "state"')


def test_a_refused_command_shows_its_reason_in_the_transcript(page: Page) -> None:
    page.goto(DIVE)
    type_and_enter(page, "FLUSHALL")
    expect(last_reply(page)).to_have_text(
        re.compile(r"^\(refused\) FLUSHALL is refused: it would delete every visitor")
    )
    type_and_enter(page, 'GET "emq:{fanin}:pending')
    expect(last_reply(page)).to_contain_text("unbalanced quotes")


def test_the_transcript_comes_back_from_valkey_after_a_reload(page: Page) -> None:
    page.goto(DIVE)
    wait_until_live(page)  # the widgets landed (a first visit's stream lands them), so the key exists
    type_and_enter(page, "TYPE emq:{fanin}:pending")
    expect(last_reply(page)).to_have_text("zset")
    page.reload()
    expect(transcript(page)).to_contain_text("TYPE emq:{fanin}:pending")
    expect(last_reply(page)).to_have_text("zset")
    box = console(page).get_by_label("Command", exact=True)
    box.press("ArrowUp")
    expect(box).to_have_value("TYPE emq:{fanin}:pending")


def test_the_transcript_is_a_polite_log_and_the_console_runs_by_keyboard(page: Page) -> None:
    page.goto(DIVE)
    log = transcript(page)
    expect(log).to_have_attribute("aria-live", "polite")
    box = console(page).get_by_label("Command", exact=True)
    box.focus()
    page.keyboard.type("PING")
    page.keyboard.press("Enter")
    expect(last_reply(page)).to_have_text("PONG")
    page.keyboard.press("Tab")
    expect(console(page).get_by_role("button", name="Run", exact=True)).to_be_focused()


@pytest.mark.parametrize("dive", DIVES)
def test_every_example_of_every_dive_runs_in_the_visitors_own_sandbox(page: Page, dive: str) -> None:
    page.goto(dive)
    wait_until_live(page)
    box = console(page)
    expect(box.get_by_label("Command", exact=True)).to_be_visible()
    examples = box.get_by_role("button", name=re.compile("^try: "))
    assert examples.count() >= 1
    for i in range(examples.count()):
        replies = transcript(page).locator("pre.console-reply")
        seen = replies.count()
        examples.nth(i).click()
        expect(replies).to_have_count(seen + 1)
        # a course example is never refused: it names the visitor's own queues, as the panels do
        expect(replies.last).not_to_have_attribute("data-kind", "refused")
        expect(replies.last).not_to_have_text(re.compile(r"^\(refused\)|NOPERM"))


@pytest.fixture
def still_page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def test_without_javascript_the_console_says_it_needs_it_and_lists_the_examples(still_page: Page) -> None:
    still_page.goto(DIVE)
    box = console(still_page)
    expect(box).to_contain_text("The console needs JavaScript")
    expect(box.locator("code", has_text="HGETALL emq:{fanin}:job:JOBparent").first).to_be_visible()
    expect(box.get_by_label("Command", exact=True)).to_be_hidden()
