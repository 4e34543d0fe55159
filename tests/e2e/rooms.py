"""What the class tests do in Chromium: the instructor signing in and
opening a room, a learner joining it, and the fan-in widget's parts they
look at (each person in a browser context of their own: the `contexts`
fixture, tests/e2e/conftest.py)."""

from __future__ import annotations

import re

from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.pages import WIDGETS, region
from tests.support import INSTRUCTOR_TOKEN

DIVE = WIDGETS["fanin"][0]  # the fan-in's dive


def fanin(page: Page) -> Locator:
    return region(page, "fanin")


def counter(page: Page) -> Locator:
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
    """The room's code, opened from the instructor's page; the class page shows."""
    instructor.get_by_label("Room name").fill(name)
    instructor.get_by_role("button", name="Open a room").click()
    expect(instructor).to_have_url(re.compile(r"/instructor/rooms/[A-Z0-9]{6}$"))
    return instructor.locator('[data-role="room-code"]').inner_text()


def join_room(ctx: BrowserContext, code: str, name: str = "Learner") -> Page:
    page = ctx.new_page()
    page.goto("/room")
    page.get_by_label("Room code").fill(code.lower())
    page.get_by_label("Your name").fill(name)
    page.get_by_role("button", name="Join").click()
    expect(page.locator('[data-role="room-code"]')).to_have_text(code)
    return page
