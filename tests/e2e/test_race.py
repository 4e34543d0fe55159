"""The race lab in Chromium on the real site: a run seen on two pages of one sandbox,
the prediction judged on what Valkey holds after the run, and the keyboard alone."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import region, wait_until_live

DIVE = "/flows/under-fire"
RUN_S = 15_000  # ms: a run is capped at 5 s; the answer and the stream come after it


def open_race(page: Page) -> Locator:
    page.goto(DIVE)
    wait_until_live(page)
    return region(page, "race")


def choose(widget: Locator, seed: int, early: bool = False, faults: tuple[str, ...] = ("crashes", "lapses",
                                                                                        "twice")) -> None:
    widget.get_by_label("Workers", exact=True).fill("3")
    widget.get_by_label("Children", exact=True).fill("4")
    widget.get_by_label("Seed", exact=True).fill(str(seed))
    for words in ("crashes", "lapses", "twice"):
        box = widget.get_by_label(re.compile(words))
        box.set_checked(words in faults)
    widget.get_by_label(re.compile("early-release")).set_checked(early)


def test_a_run_on_one_page_is_seen_on_another_page_of_the_sandbox(context: BrowserContext) -> None:
    first, second = context.new_page(), context.new_page()
    mine, theirs = open_race(first), open_race(second)
    choose(mine, seed=11)
    mine.get_by_role("button", name="Run", exact=True).click()
    for widget in (mine, theirs):
        expect(widget.locator(".race-invariants li")).to_have_count(3, timeout=RUN_S)
        expect(widget.locator('[data-role="race-seed-shown"]')).to_have_text("11")
        expect(widget.locator('.race-invariants li[data-held="yes"]')).to_have_count(3)
        expect(widget.locator(".race-timeline tbody tr").first).to_be_visible()
    rows = mine.locator(".race-timeline tbody tr").count()
    expect(theirs.locator(".race-timeline tbody tr")).to_have_count(rows)


def test_the_prediction_is_judged_on_what_valkey_holds_after_the_run(page: Page) -> None:
    widget = open_race(page)
    question = widget.locator('[data-role="predict"] fieldset[data-question="released-early"]')
    expect(question.locator("legend")).to_have_text(re.compile("^Predict"))
    choose(widget, seed=3, faults=("twice",))
    question.get_by_role("radio", name=re.compile("only after the last child")).check()
    widget.get_by_role("button", name="Run", exact=True).click()
    # the course's complete with only redelivered completions: never released early
    expect(widget.locator('[data-role="announce"]')).to_have_text(re.compile("^Right"), timeout=RUN_S)


def test_the_race_is_run_and_reset_from_the_keyboard_alone(page: Page) -> None:
    widget = open_race(page)
    widget.get_by_label("Seed", exact=True).focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("5")
    run = widget.get_by_role("button", name="Run", exact=True)
    run.focus()
    page.keyboard.press("Enter")
    expect(widget.locator(".race-invariants li")).to_have_count(3, timeout=RUN_S)
    expect(widget.locator('[data-role="race-seed-shown"]')).to_have_text("5")
    widget.get_by_role("button", name="Reset", exact=True).focus()
    page.keyboard.press("Enter")
    expect(widget.locator(".race-invariants li")).to_have_count(0, timeout=RUN_S)
    expect(widget.locator(".race-picture")).to_contain_text("No run yet")


def test_without_javascript_a_fresh_sandbox_shows_a_recorded_run_read_from_valkey(browser: Browser, site: Site) -> None:
    """No run of the visitor's yet: the first showing played the tour's race, and the page draws it
    as Valkey holds it (the same readout and timeline the state API reads)."""
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto("/")  # the reader's first page sets the cookie (a first visit shows the specimen's run)
        page.goto(DIVE)
        widget = region(page, "race")
        expect(widget.locator('[data-role="race-recorded"]')).to_contain_text("A recorded run")
        state = context.request.get(f"{site.url}/api/widgets/race/state").json()["snapshot"]
        assert state["picture"]["recorded"] is True and state["picture"]["status"] == "done"
        expect(widget.locator('[data-role="readout"]')).to_have_text(state["readout"])
        expect(widget.locator(".race-invariants li")).to_have_count(3)
        expect(widget.locator(".race-timeline tbody tr")).to_have_count(len(state["picture"]["timeline"]))
        sandbox = site.sandbox_of(context)
        written = [f for f in site.redis().hkeys(f"lab:{{{sandbox}.race}}:state") if f.startswith("race:t:")]
        assert len(written) == len(state["picture"]["timeline"]) > 0
    finally:
        context.close()
