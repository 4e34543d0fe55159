"""What the class thinks, in Chromium: an instructor and three learners, each
in a browser context of their own. The class page counts the answers live
(no reload) with the common wrong answer's feedback; "Ask the class" brings
every learner's page to the question, rebuilt at its step; "Reveal" shows
them the distribution; a second round shows how the answers moved."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.rooms import (
    DIVE,
    FANIN_QUESTION,
    LEGEND,
    answer_and_complete,
    counter,
    fanin,
    join_room,
    open_room,
    question,
    signed_in_instructor,
)

FEEDBACK = FANIN_QUESTION["feedback"]
DELAYS: list[float] = []  # the class page's update delay, printed at the end of the module


@pytest.fixture(scope="module", autouse=True)
def delays() -> Iterator[None]:
    """The class page's update delays, said at the end of the module (`pytest -s` shows them)."""
    yield
    if DELAYS:
        print(f"\nclass page update after the last answer: {', '.join(f'{d * 1000:.0f} ms' for d in DELAYS)}")


def answers(page: Page) -> Locator:
    return page.get_by_role("region", name=re.compile("answers"))


def block(page: Page) -> Locator:
    return answers(page).locator("article.class-question")


def learner_on_dive(contexts: Callable[..., BrowserContext], code: str, name: str) -> Page:
    page = join_room(contexts(), code, name)
    page.goto(DIVE)
    expect(counter(page)).to_have_text("3")
    return page


def class_box(page: Page) -> Locator:
    return page.get_by_role("region", name="Your class's question")


def test_three_answers_reach_the_class_page_within_a_second_with_counts_and_feedback(
    contexts: Callable[..., BrowserContext],
) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Answers e2e")
    expect(class_page.locator("[data-class]")).to_have_attribute("data-live", "1")
    class_page.evaluate("window.notReloaded = true")
    learners = [learner_on_dive(contexts, code, name) for name in ("Ada", "Grace", "Linus")]
    answer_and_complete(learners[0], 3)
    answer_and_complete(learners[1], 3)
    expect(block(class_page)).to_contain_text("2 answered")
    # The class page notes the moment it draws "3 answered" (same machine, same clock as ours).
    class_page.evaluate("""() => new MutationObserver((_, seen) => {
        if (document.querySelector('[data-role="answer-list"]').textContent.includes("3 answered")) {
          window.sawThird = Date.now(); seen.disconnect(); }
      }).observe(document.querySelector('[data-role="answer-list"]'), {childList: true, subtree: true})""")
    question(learners[2]).locator('input[type="number"]').fill("2")
    with learners[2].expect_request(re.compile("/api/widgets/fanin/complete-child$")):
        fanin(learners[2]).get_by_role("button", name="Complete child", exact=True).click()
    sent = time.time() * 1000  # the answer has left the learner's browser
    expect(block(class_page).locator('[data-role="answered"]')).to_have_text("3 answered")
    DELAYS.append(max(0.0, class_page.evaluate("window.sawThird") - sent) / 1000)
    assert DELAYS[-1] < 1.0, f"the class page showed the third answer {DELAYS[-1]:.2f} s after it was sent"
    counts = block(class_page).locator('[data-role="distribution"] li')
    expect(counts).to_have_text([re.compile(r"^3: 2 learners \(not quite\)"), re.compile(r"^2: 1 learner \(right\)")])
    expect(block(class_page).locator('[data-role="common-wrong"]')).to_contain_text(FEEDBACK)
    expect(block(class_page).locator('[data-role="waiting"]')).to_have_text("0 not yet")
    assert class_page.evaluate("window.notReloaded === true")
    projector = class_page.context.new_page()
    projector.goto(f"/instructor/rooms/{code}/projector")
    expect(block(projector)).to_contain_text("3 answered")
    expect(projector.locator("main")).not_to_contain_text("Grace")


def test_ask_the_class_brings_every_page_to_the_question_reveal_shows_it_and_a_second_round_shows_the_move(
    contexts: Callable[..., BrowserContext],
) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Ask e2e")
    ada, grace = (learner_on_dive(contexts, code, name) for name in ("Ada", "Grace"))
    linus = join_room(contexts(), code, "Linus")  # waits on the room page: no widget on it
    expect(linus.locator("body")).to_have_attribute("data-follows-class", "open")
    fanin(ada).get_by_role("button", name="Complete child", exact=True).click()
    expect(counter(ada)).to_have_text("2")

    picks = class_page.get_by_role("group", name="Question and step")
    picks.get_by_role("radio", name=re.compile(r"^fanin · step 0 .*" + re.escape(LEGEND))).check()
    class_page.get_by_role("button", name="Ask the class").click()
    expect(class_page.locator('[data-role="asked"]')).to_contain_text("round 1")
    expect(linus).to_have_url(re.compile(f"{DIVE}#w-fanin$"))
    for page in (ada, grace, linus):
        expect(counter(page)).to_have_text("3")  # rebuilt at step 0
        expect(question(page).locator("legend")).to_have_text(LEGEND)
        expect(class_box(page)).to_contain_text(f"Your class is asked: {LEGEND}")
        expect(page.locator('[data-role="class-notice"]')).to_contain_text("Your instructor asks the class")
    for page, value in ((ada, 3), (grace, 2), (linus, 2)):
        answer_and_complete(page, value)
        expect(class_box(page).locator('[data-role="class-ask-mine"]')).to_contain_text("Your answer")
    expect(class_box(ada)).not_to_contain_text("How the class answered")  # hidden until revealed

    class_page.get_by_role("button", name="Reveal").click()
    for page in (ada, grace, linus):
        expect(class_box(page).locator('[data-role="class-ask-counts"] li')).to_have_text(
            ["2: 2 learners (right)", "3: 1 learner (not quite)"])

    class_page.get_by_role("button", name="Second round").click()
    expect(class_page.locator('[data-role="asked"]')).to_contain_text("round 2")
    for page in (ada, grace, linus):
        expect(counter(page)).to_have_text("3")
        expect(class_box(page)).to_contain_text("second round")
        expect(class_box(page)).not_to_contain_text("How the class answered")
        answer_and_complete(page, 2)
    class_page.get_by_role("button", name="Reveal").click()
    for page in (ada, grace, linus):
        expect(class_box(page).locator('[data-role="class-ask-moved"] li')).to_have_text(
            ["2: 2 → 3", "3: 1 → 0"])
    moved = answers(class_page).locator('[data-role="moved-words"]')
    expect(moved).to_have_text("1 learner changed their answer, 1 of them to the right one")
