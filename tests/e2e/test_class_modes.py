"""A class in Chromium: the instructor and learners in browser contexts of
their own. A demo shows the instructor's sandbox read-only and closing the
class sends everyone back; "Bring everyone" moves open pages (the room page
too); Watch names whom it shows; an instructor's reset from /instructor
reaches an open page; every instructor surface fits a phone with no axe
violation. Every page follows without a reload."""

from __future__ import annotations

import re
from collections.abc import Callable

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.rooms import DIVE, counter, fanin, join_room, open_room, question, signed_in_instructor

GRACE = "Grace <b>Hopper</b>"


def complete(page: Page) -> Locator:
    return fanin(page).get_by_role("button", name="Complete child", exact=True)


def banner(page: Page) -> Locator:
    return page.locator('[data-role="room-banner"]')


def without_javascript(contexts: Callable[..., BrowserContext], page: Page) -> Page:
    """The same person (their cookies) on a page without JavaScript: what the server alone draws."""
    still = contexts(java_script_enabled=False, storage_state=page.context.storage_state()).new_page()
    still.goto(DIVE)
    return still


def on_dive(ctx: BrowserContext, code: str, name: str) -> Page:
    page = join_room(ctx, code, name)
    page.goto(DIVE)
    expect(counter(page)).to_have_text("3")
    return page


def test_a_demo_shows_the_instructor_sandbox_read_only_and_closing_the_class_sends_everyone_back(
    contexts: Callable[..., BrowserContext],
) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Demo e2e")
    ada, grace = on_dive(contexts(), code, "Ada"), on_dive(contexts(), code, GRACE)
    expect(banner(ada)).to_contain_text(f"You are in class {code}: you act in your own sandbox")
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    expect(class_page.locator("tr[data-learner]", has_text=GRACE)).to_have_count(1)  # markup shown as text

    drive = teacher.new_page()
    drive.goto(DIVE)
    expect(counter(drive)).to_have_text("3")
    class_page.get_by_role("button", name="Start demo").click()
    expect(class_page.get_by_role("button", name="Stop demo")).to_be_visible()
    for learner in (ada, grace):
        expect(banner(learner)).to_contain_text("watching the instructor's sandbox, read-only")
        expect(complete(learner)).to_be_disabled()
        expect(counter(learner)).to_have_text("3")
    complete(drive).click()  # the instructor acts; the learners watch it live
    expect(counter(ada)).to_have_text("2")
    expect(fanin(ada).locator('[data-role="outcome"]')).to_contain_text("The instructor:")

    class_page.get_by_role("button", name="Stop demo").click()
    expect(complete(ada)).to_be_enabled()
    expect(counter(ada)).to_have_text("2")  # her own sandbox again
    expect(counter(grace)).to_have_text("3")
    class_page.get_by_role("button", name="Close the class").click()
    closed = "The class was closed: you are back in your own sandbox."
    for learner in (ada, grace):
        expect(banner(learner)).to_contain_text(closed)
    expect(banner(without_javascript(contexts, ada))).to_contain_text(closed)  # the server's drawing, both
    expect(class_page.locator('[data-role="flash"]')).to_contain_text("results stay downloadable")
    # said until dismissed, then forgotten by this browser only: back on the same dive, no banner
    banner(ada).get_by_role("button", name="Dismiss").click()
    expect(ada).to_have_url(re.compile(f"{DIVE}$"))
    expect(banner(ada)).to_be_hidden()
    grace.reload()
    expect(banner(grace)).to_contain_text(closed)


def test_bring_everyone_moves_an_open_dive_and_the_room_page(contexts: Callable[..., BrowserContext]) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Bring e2e")
    ada = on_dive(contexts(), code, "Ada")
    grace = join_room(contexts(), code, "Grace")  # the room page: no widget, it follows the class
    expect(grace.locator("body")).to_have_attribute("data-follows-class", "open")
    class_page.get_by_label("Dive").select_option("/batches/bulk-flows")
    class_page.get_by_role("button", name="Bring everyone to this page").click()
    for page in (ada, grace):
        expect(page).to_have_url(re.compile("/batches/bulk-flows$"))
    expect(class_page).to_have_url(re.compile(f"/instructor/rooms/{code}$"))


def test_watch_names_the_learner_and_follows_their_widget_live_and_read_only(
    contexts: Callable[..., BrowserContext],
) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Watch e2e")
    ada = on_dive(contexts(), code, "Ada")
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    class_page.get_by_role("link", name="Watch Ada").click()
    expect(class_page).to_have_url(re.compile(f"{DIVE}$"))
    expect(banner(class_page)).to_contain_text(f"You are watching Ada's sandbox (class {code}), read-only")
    expect(counter(class_page)).to_have_text("2")
    expect(complete(class_page)).to_be_disabled()
    expect(question(class_page).locator(".predict-hint")).to_have_text(
        "Read-only: you are watching, so nothing here is answered or pressed.")
    complete(ada).click()
    expect(counter(class_page)).to_have_text("1")  # live, without a reload
    # the class changes mode while the Watch is open: its banner stays the server's (Stop watching kept)
    control = teacher.new_page()
    control.goto(f"/instructor/rooms/{code}")
    control.get_by_role("button", name="Start demo").click()
    expect(banner(ada)).to_contain_text(f"Demo in class {code}")
    class_page.wait_for_timeout(1000)  # the Watch heard the same event, and reconnected
    watching = f"You are watching Ada's sandbox (class {code}), read-only: the controls are disabled. Stop watching"
    expect(banner(class_page)).to_have_text(watching)
    expect(banner(without_javascript(contexts, class_page))).to_have_text(watching)
    control.get_by_role("button", name="Stop demo").click()
    expect(complete(ada)).to_be_enabled()
    banner(class_page).get_by_role("button", name="Stop watching").click()
    expect(counter(class_page)).to_have_text("3")  # the instructor's own sandbox again


def test_a_reset_from_the_instructor_page_reaches_the_learner_named_in_live_sandboxes(
    contexts: Callable[..., BrowserContext],
) -> None:
    instructor = signed_in_instructor(contexts())
    code = open_room(instructor, "Reset e2e")
    ada = on_dive(contexts(), code, "Ada Reset")
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    instructor.goto("/instructor")
    row = instructor.locator("tr[data-sandbox]", has=instructor.locator('[data-role="name"]', has_text="Ada Reset"))
    expect(row.locator('[data-role="room"]')).to_have_text(code)
    expect(row.locator('[data-role="widget"]')).to_have_text("fanin")
    row.get_by_role("button", name=re.compile("^Reset sandbox")).click()
    expect(instructor.locator('[data-role="flash"]')).to_contain_text("(Ada Reset) was reset")
    expect(counter(ada)).to_have_text("3")  # no reload: the page heard the reset on its stream
    expect(fanin(ada).locator('[data-role="status"]')).to_contain_text("reset by the instructor")


def test_instructor_surfaces_fit_a_phone_and_axe_finds_no_violation(contexts: Callable[..., BrowserContext]) -> None:
    ctx = contexts(viewport={"width": 390, "height": 844})
    class_page = signed_in_instructor(ctx)
    code = open_room(class_page, "Phone e2e")
    on_dive(contexts(), code, "A learner with a rather long name indeed")
    for path in ("/instructor", f"/instructor/rooms/{code}", f"/instructor/rooms/{code}?confirm=reset",
                 f"/instructor/rooms/{code}/projector", "/room"):
        class_page.goto(path)
        class_page.locator("h1").wait_for()
        width = class_page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} scrolls sideways: {width} px"
        results = Axe().run(class_page)
        assert results.violations_count == 0, results.generate_report()
