"""The instructor and rooms in Chromium: a reset reaches an open learner page;
in a room a click in one browser shows in another; demo mode blocks learners."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.conftest import INSTRUCTOR_TOKEN, Site

DIVE = "/flows/parent-and-children"


@pytest.fixture
def contexts(browser: Browser, site: Site) -> Iterator[list[BrowserContext]]:
    made: list[BrowserContext] = []

    def make() -> BrowserContext:
        ctx = browser.new_context(base_url=site.url)
        ctx.set_default_timeout(10_000)
        made.append(ctx)
        return ctx

    yield make  # type: ignore[misc]
    for ctx in made:
        ctx.close()


def fanin(page: Page):
    return page.get_by_role("region", name=re.compile("fan-in"))


def counter(page: Page):
    return fanin(page).locator('[data-role="dependencies"]')


def signed_in_instructor(ctx: BrowserContext) -> Page:
    page = ctx.new_page()
    answer = page.goto("/instructor")
    assert answer is not None and answer.status == 401
    page.get_by_label("Instructor token").fill(INSTRUCTOR_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator('[data-role="flash"]')).to_have_text("Signed in as the instructor.")
    return page


def open_room(instructor: Page, name: str) -> str:
    instructor.get_by_label("Room name").fill(name)
    instructor.get_by_role("button", name="Open a room").click()
    row = instructor.locator("tr[data-room]", has_text=name)
    expect(row).to_have_count(1)
    return str(row.get_attribute("data-room"))


def join_room(ctx: BrowserContext, code: str) -> Page:
    page = ctx.new_page()
    page.goto("/room")
    page.get_by_label("Room code").fill(code.lower())
    page.get_by_role("button", name="Join").click()
    expect(page.locator('[data-role="room-code"]')).to_have_text(code)
    return page


def test_an_instructor_reset_reaches_an_open_learner_page(contexts, site: Site) -> None:
    learner_ctx = contexts()
    learner = learner_ctx.new_page()
    learner.goto(DIVE)
    expect(counter(learner)).to_have_text("3")
    fanin(learner).get_by_role("button", name="Complete child").click()
    expect(counter(learner)).to_have_text("2")
    snapshot = learner_ctx.request.get("/api/widgets/fanin/state").json()["snapshot"]
    sandbox = snapshot["queues"][0]["queue"].split(".")[0]

    instructor = signed_in_instructor(contexts())
    row = instructor.locator(f'tr[data-sandbox="{sandbox}"]')
    expect(row).to_contain_text(DIVE)
    row.get_by_role("button", name="Reset").click()
    expect(instructor.locator('[data-role="flash"]')).to_contain_text(f"Sandbox {sandbox} was reset")

    # No reload: the open page hears the reset on its stream and redraws.
    expect(fanin(learner).locator('[data-role="status"]')).to_contain_text("sandbox was reset")
    expect(counter(learner)).to_have_text("3")


def test_in_a_room_a_click_in_one_browser_shows_in_another(contexts, site: Site) -> None:
    instructor = signed_in_instructor(contexts())
    code = open_room(instructor, "Room e2e")
    first = join_room(contexts(), code)
    second = join_room(contexts(), code)
    first.goto(DIVE)
    second.goto(DIVE)
    expect(counter(first)).to_have_text("3")
    expect(counter(second)).to_have_text("3")
    expect(first.locator('[data-role="room-banner"]')).to_contain_text(f"You are in room {code}:")
    fanin(first).get_by_role("button", name="Complete child").click()
    expect(counter(first)).to_have_text("2")
    expect(counter(second)).to_have_text("2")  # live, over the second page's stream
    fanin(second).get_by_role("button", name="Complete child").click()
    expect(counter(first)).to_have_text("1")


def test_demo_mode_blocks_learners_and_they_watch_the_instructor(contexts, site: Site) -> None:
    instructor = signed_in_instructor(contexts())
    code = open_room(instructor, "Demo e2e")
    row = instructor.locator(f'tr[data-room="{code}"]')
    row.get_by_role("button", name="Demo mode").click()
    expect(instructor.locator(f'tr[data-room="{code}"] [data-role="mode"]')).to_contain_text("only the instructor acts")

    room_page = join_room(contexts(), code)
    expect(room_page.locator('[data-role="mode"]')).to_contain_text("Demo mode")
    room_page.goto(DIVE)
    expect(counter(room_page)).to_have_text("3")
    banner = room_page.locator('[data-role="room-banner"]')
    expect(banner).to_contain_text(f"room {code}, in demo mode")
    fanin(room_page).get_by_role("button", name="Complete child").click()
    expect(fanin(room_page).locator('[data-role="status"]')).to_contain_text(
        "demo mode: only the instructor acts in this room"
    )
    expect(counter(room_page)).to_have_text("3")

    instructor.goto(DIVE)  # the instructor is in the room they opened
    fanin(instructor).get_by_role("button", name="Complete child").click()
    expect(counter(instructor)).to_have_text("2")
    expect(counter(room_page)).to_have_text("2")
