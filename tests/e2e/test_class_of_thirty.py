"""A class in Chromium: the instructor and two learners in three browser
contexts. Each learner keeps their own sandbox; the class page follows them
live; a demo shows the instructor's sandbox read-only; Reset every learner asks
first; closing the class sends everyone back to their own sandbox, with a
notice. Every page follows the instructor's action without a reload."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.rooms import DIVE, counter, fanin, join_room, open_room, signed_in_instructor

ADA, GRACE = "Ada Lovelace", "Grace <b>Hopper</b>"


def complete(page: Page) -> Locator:
    return fanin(page).get_by_role("button", name="Complete child", exact=True)


def banner(page: Page) -> Locator:
    return page.locator('[data-role="room-banner"]')


def open_class(ctx: BrowserContext, name: str) -> tuple[Page, str]:
    page = signed_in_instructor(ctx)
    return page, open_room(page, name)


def join(ctx: BrowserContext, code: str, name: str) -> Page:
    page = join_room(ctx, code, name)
    page.goto(DIVE)
    expect(counter(page)).to_have_text("3")
    return page


def row(class_page: Page, name: str) -> Locator:
    return class_page.locator("tr[data-learner]", has=class_page.locator('[data-role="name"]', has_text=name))


def test_a_class_of_two_learners_follows_the_instructor_live(contexts: Callable[..., BrowserContext]) -> None:
    teacher_ctx = contexts()
    class_page, code = open_class(teacher_ctx, "Class e2e")
    ada = join(contexts(), code, ADA)
    grace = join(contexts(), code, GRACE)
    expect(banner(ada)).to_contain_text(f"You are in class {code}: you act in your own sandbox")

    # Own sandboxes: Ada's completion is Ada's alone.
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    grace.wait_for_timeout(300)
    expect(counter(grace)).to_have_text("3")

    # The class page (opened before they joined) shows both, and Ada's progress, without a reload.
    expect(row(class_page, ADA)).to_have_count(1)
    expect(row(class_page, "Grace <b>Hopper</b>")).to_have_count(1)  # markup shown as text
    expect(row(class_page, ADA).locator('[data-role="progress"]')).to_contain_text(re.compile(r"fanin 1 of \d+ steps"))
    expect(row(class_page, ADA).locator('[data-role="online"]')).to_have_text("online")
    expect(row(class_page, ADA).locator('[data-role="page"]')).to_have_text(DIVE)

    # The instructor drives a sandbox of their own, then starts the demo.
    drive = teacher_ctx.new_page()
    drive.goto(DIVE)
    expect(counter(drive)).to_have_text("3")
    complete(drive).click()
    expect(counter(drive)).to_have_text("2")
    complete(drive).click()
    expect(counter(drive)).to_have_text("1")
    class_page.get_by_role("button", name="Start demo").click()
    expect(class_page.get_by_role("button", name="Stop demo")).to_be_visible()
    for learner in (ada, grace):
        expect(counter(learner)).to_have_text("1")
        expect(complete(learner)).to_be_disabled()
        expect(banner(learner)).to_contain_text("watching the instructor's sandbox, read-only")
    complete(drive).click()  # the instructor acts; the learners watch it live
    expect(counter(drive)).to_have_text("0")
    expect(counter(ada)).to_have_text("0")

    class_page.get_by_role("button", name="Stop demo").click()
    expect(counter(ada)).to_have_text("2")
    expect(counter(grace)).to_have_text("3")
    expect(complete(ada)).to_be_enabled()
    expect(banner(grace)).to_contain_text("you act in your own sandbox")

    # Reset every learner asks first, naming how many, then both pages redraw.
    class_page.get_by_role("button", name="Reset every learner").click()
    confirm = class_page.locator('[data-role="confirm"]')
    expect(confirm).to_contain_text("2 learners")
    expect(counter(ada)).to_have_text("2")  # nothing happened yet
    confirm.get_by_role("button", name="Yes, reset 2 learners").click()
    expect(class_page.locator('[data-role="flash"]')).to_contain_text("2 learners")
    expect(counter(ada)).to_have_text("3")
    expect(fanin(ada).locator('[data-role="status"]')).to_contain_text("sandbox was reset")
    expect(fanin(grace).locator('[data-role="status"]')).to_contain_text("sandbox was reset")
    complete(grace).click()
    expect(counter(grace)).to_have_text("2")

    # Close: both pages are back in their own sandboxes, and say so.
    class_page.get_by_role("button", name="Close the class").click()
    for learner in (ada, grace):
        expect(banner(learner)).to_have_text("The class was closed: you are back in your own sandbox.")
    expect(counter(ada)).to_have_text("3")
    expect(counter(grace)).to_have_text("2")
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    grace.wait_for_timeout(300)
    expect(counter(grace)).to_have_text("2")


def test_bring_everyone_moves_open_learner_pages_and_together_shares_one_sandbox(
    contexts: Callable[..., BrowserContext],
) -> None:
    class_page, code = open_class(contexts(), "Together e2e")
    ada = join(contexts(), code, "Ada")
    grace = join(contexts(), code, "Grace")
    class_page.get_by_role("button", name="Work together").click()
    expect(banner(ada)).to_contain_text("working together")
    complete(ada).click()
    expect(counter(grace)).to_have_text("2")  # one shared sandbox, live on both pages
    class_page.get_by_label("Dive").select_option("/flows/cross-queue")
    class_page.get_by_role("button", name="Bring everyone to this page").click()
    expect(ada).to_have_url(re.compile("/flows/cross-queue$"))
    expect(grace).to_have_url(re.compile("/flows/cross-queue$"))
    expect(class_page).to_have_url(re.compile(f"/instructor/rooms/{code}$"))


def test_bring_everyone_moves_learners_on_pages_without_widgets_too(contexts: Callable[..., BrowserContext]) -> None:
    class_page, code = open_class(contexts(), "Bring e2e")
    ada = join(contexts(), code, "Ada")
    grace = join(contexts(), code, "Grace")
    ada.goto("/")  # the course index: no widget on it
    grace.goto("/progress")
    for page in (ada, grace):
        expect(page.locator("body")).to_have_attribute("data-follows-class", "open")
    class_page.get_by_label("Dive").select_option("/batches/bulk-flows")
    class_page.get_by_role("button", name="Bring everyone to this page").click()
    expect(ada).to_have_url(re.compile("/batches/bulk-flows$"))
    expect(grace).to_have_url(re.compile("/batches/bulk-flows$"))


def test_watch_shows_the_instructor_a_learner_widget_live_and_read_only(
    contexts: Callable[..., BrowserContext],
) -> None:
    class_page, code = open_class(contexts(), "Watch e2e")
    ada = join(contexts(), code, "Ada")
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    class_page.get_by_role("link", name="Watch Ada").click()
    expect(class_page).to_have_url(re.compile(f"{DIVE}$"))
    expect(counter(class_page)).to_have_text("2")
    expect(complete(class_page)).to_be_disabled()
    expect(banner(class_page)).to_contain_text("watching a learner's sandbox, read-only")
    complete(ada).click()
    expect(counter(class_page)).to_have_text("1")  # live, without a reload
    banner(class_page).get_by_role("button", name="Stop watching").click()
    expect(counter(class_page)).to_have_text("3")  # the instructor's own sandbox again


def test_instructor_surfaces_fit_a_phone_and_axe_finds_no_violation(contexts: Callable[..., BrowserContext]) -> None:
    ctx = contexts(viewport={"width": 390, "height": 844})
    class_page, code = open_class(ctx, "Phone e2e")
    join(contexts(), code, "A learner with a rather long name indeed")
    expect(row(class_page, "A learner with a rather long name indeed")).to_have_count(1)
    for path in ("/instructor", f"/instructor/rooms/{code}", f"/instructor/rooms/{code}?confirm=reset", "/room"):
        class_page.goto(path)
        class_page.locator("h1").wait_for()
        width = class_page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} scrolls sideways: {width} px"
        results = Axe().run(class_page)
        assert results.violations_count == 0, results.generate_report()
    class_page.goto("/instructor")
    expect(class_page.get_by_role("button", name="Open a room")).to_be_in_viewport()


def test_the_class_page_is_usable_by_keyboard(contexts: Callable[..., BrowserContext]) -> None:
    class_page, _code = open_class(contexts(), "Keyboard e2e")
    button = class_page.get_by_role("button", name="Start demo")
    for _ in range(40):
        class_page.keyboard.press("Tab")
        if button.evaluate("(b) => b === document.activeElement"):
            break
    else:
        pytest.fail("Tab never reached Start demo")
    class_page.keyboard.press("Enter")
    expect(class_page.get_by_role("button", name="Stop demo")).to_be_visible()
