"""The instructor and rooms in Chromium: a reset reaches an open learner page;
in a class working together a click in one browser shows in another; demo
mode blocks learners and shows them the instructor's sandbox."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import Site
from tests.e2e.rooms import DIVE, counter, fanin, join_room, open_room, signed_in_instructor


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


def test_reset_all_sandboxes_asks_first_naming_how_many(contexts, site: Site) -> None:
    learner = contexts().new_page()
    learner.goto(DIVE)
    fanin(learner).get_by_role("button", name="Complete child").click()
    expect(counter(learner)).to_have_text("2")
    instructor = signed_in_instructor(contexts())
    instructor.get_by_role("button", name="Reset all sandboxes").click()
    confirm = instructor.locator('[data-role="confirm"]')
    expect(confirm).to_contain_text(re.compile(r"Reset all \d+ live sandbox"))
    expect(counter(learner)).to_have_text("2")  # nothing happened yet
    confirm.get_by_role("button", name=re.compile("Yes, reset all")).click()
    expect(instructor.locator('[data-role="flash"]')).to_contain_text("Every sandbox was reset")
    expect(counter(learner)).to_have_text("3")


def test_in_a_class_working_together_a_click_in_one_browser_shows_in_another(contexts, site: Site) -> None:
    instructor = signed_in_instructor(contexts())
    code = open_room(instructor, "Room e2e")
    first = join_room(contexts(), code, "First")
    second = join_room(contexts(), code, "Second")
    instructor.get_by_role("button", name="Work together").click()
    expect(instructor.get_by_role("button", name="Back to own sandboxes")).to_be_visible()
    first.goto(DIVE)
    second.goto(DIVE)
    expect(counter(first)).to_have_text("3")
    expect(counter(second)).to_have_text("3")
    expect(first.locator('[data-role="room-banner"]')).to_contain_text(f"You are in class {code}, working together")
    fanin(first).get_by_role("button", name="Complete child").click()
    expect(counter(first)).to_have_text("2")
    expect(counter(second)).to_have_text("2")  # live, over the second page's stream
    fanin(second).get_by_role("button", name="Complete child").click()
    expect(counter(first)).to_have_text("1")


def test_demo_mode_blocks_learners_and_they_watch_the_instructor(contexts, site: Site) -> None:
    instructor_ctx = contexts()
    instructor = signed_in_instructor(instructor_ctx)
    code = open_room(instructor, "Demo e2e")
    instructor.get_by_role("button", name="Start demo").click()
    expect(instructor.locator('[data-role="mode"]')).to_contain_text("read-only")

    room_page = join_room(contexts(), code)
    expect(room_page.locator('[data-role="mode"]')).to_contain_text("Demo")
    room_page.goto(DIVE)
    expect(counter(room_page)).to_have_text("3")
    banner = room_page.locator('[data-role="room-banner"]')
    expect(banner).to_contain_text(f"Demo in class {code}")
    expect(fanin(room_page).get_by_role("button", name="Complete child")).to_be_disabled()
    answer = room_page.request.post("/api/widgets/fanin/complete-child", data={})
    assert answer.status == 403
    assert answer.json()["error"].startswith("demo mode: only the instructor acts in this room")
    expect(counter(room_page)).to_have_text("3")

    drive = instructor_ctx.new_page()
    drive.goto(DIVE)  # the demo shows this browser's own sandbox
    fanin(drive).get_by_role("button", name="Complete child").click()
    expect(counter(drive)).to_have_text("2")
    expect(counter(room_page)).to_have_text("2")
