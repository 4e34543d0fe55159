"""Predictions and progress in Chromium: the verdicts follow the keys the test reads from Valkey."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region
from tests.e2e.test_deep_links import sandbox_of

FANIN_DIVE = WIDGETS["fanin"][0]


def question(widget: Locator) -> Locator:
    """The widget's Predict fieldset (DOM contract: its legend starts with "Predict")."""
    return widget.locator("fieldset").filter(has=widget.page.locator("legend", has_text=re.compile(r"^Predict")))


def announced(widget: Locator) -> Locator:
    return widget.locator("[aria-live]")


def open_widget(page: Page, name: str) -> Locator:
    page.goto(WIDGETS[name][0])
    widget = region(page, name)
    expect(widget).to_have_class(re.compile(r"\bis-live\b"))
    widget.get_by_role("button", name="Reset", exact=True).click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Reset")
    return widget


def answer_number(widget: Locator, value: int, button: str) -> None:
    fieldset = question(widget)
    fieldset.locator('input[type="number"]').fill(str(value))
    widget.get_by_role("button", name=button, exact=True).click()


def answer_choice(widget: Locator, label: str, button: str) -> None:
    question(widget).get_by_role("radio", name=label).check()
    widget.get_by_role("button", name=button, exact=True).click()


def test_the_fanin_asks_for_dependencies_and_judges_2_right_and_5_wrong_by_valkey(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    expect(question(widget).locator("legend")).to_contain_text(":dependencies be after this completion")
    expect(question(widget).locator('input[type="number"]')).to_have_count(1)
    answer_number(widget, 2, "Complete child")
    expect(announced(widget)).to_have_text(re.compile(r"^Right: Valkey now holds :dependencies = 2\."))
    answer_number(widget, 5, "Complete child")
    expect(announced(widget)).to_have_text(re.compile(r"^Not quite: you said 5; Valkey now holds :dependencies = 1\."))
    queue = f"{sandbox_of(widget)}.fanin"
    assert site.redis().get(f"emq:{{{queue}}}:job:JOBparent:dependencies") == "1"
    # The next completion is asked about afresh: the input is empty again.
    expect(question(widget).locator('input[type="number"]')).to_have_value("")


def stepper_keys(site: Site, sandbox: str) -> int:
    return sum(1 for _ in site.redis().scan_iter(match=f"emq:{{{sandbox}.stepper}}:*"))


def outbox_dependencies(site: Site, sandbox: str) -> int:
    return int(site.redis().get(f"emq:{{{sandbox}.outbox.orders}}:job:JOBparent:dependencies") or -1)


def results_dependencies(site: Site, sandbox: str) -> int:
    return int(site.redis().get(f"emq:{{{sandbox}.results}}:job:JOBquote:dependencies") or -1)


def ledger_results(site: Site, sandbox: str) -> int:
    return len(json.loads(site.redis().hget(f"lab:{{{sandbox}.ledger.orders}}:state", "result") or "[]"))


# widget -> (the button the question is for, a wrong guess, the value read from Valkey
# after the action, the words the verdict names it with)
NUMBER_QUESTIONS: dict[str, tuple[str, int, Callable[[Site, str], int], str]] = {
    "enqueue-stepper": ("Next move", 99, stepper_keys, "{} keys in the stepper's queue"),
    "outbox": ("Complete child", 99, outbox_dependencies, ":dependencies = {}"),
    "results": ("Fail child at the cap", 99, results_dependencies, ":dependencies = {}"),
    "ledger": ("Next flow", 99, ledger_results, "{} entries in the result list"),
}


def test_every_other_widget_judges_its_question_by_the_value_the_test_reads_from_valkey(page: Page, site: Site) -> None:
    for name, (button, guess, read, words) in NUMBER_QUESTIONS.items():
        widget = open_widget(page, name)
        expect(question(widget).locator("legend")).to_have_text(re.compile(r"^Predict"))
        answer_number(widget, guess, button)
        expect(announced(widget)).to_have_text(re.compile(r"^Not quite"))
        truth = read(site, sandbox_of(widget))
        expect(announced(widget)).to_contain_text(f"Valkey now holds {words.format(truth)}.")
        widget.get_by_role("button", name="Reset", exact=True).click()
        expect(widget.locator('[data-role="outcome"]')).to_contain_text("Reset")
        answer_number(widget, truth, button)
        expect(announced(widget)).to_have_text(
            re.compile(rf"^Right: Valkey now holds {re.escape(words.format(truth))}\.")
        )


def test_the_failure_policy_asks_what_becomes_of_the_parent_and_valkey_answers(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    expect(question(widget).get_by_role("radio")).to_have_count(3)
    answer_choice(widget, "Released into pending", "Fail child at the cap")
    expect(announced(widget)).to_have_text(re.compile(r"^Not quite"))
    queue = f"{sandbox_of(widget)}.failure-policy"
    state = site.redis().hget(f"emq:{{{queue}}}:job:JOBparent", "state")
    label = {"failed": "Failed, into dead", "awaiting_children": "Stays held (awaiting_children)"}[state]
    expect(announced(widget)).to_contain_text(f"the parent row's state: {label}")
    widget.get_by_role("button", name="Reset", exact=True).click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Reset")
    answer_choice(widget, label, "Fail child at the cap")
    expect(announced(widget)).to_have_text(re.compile(r"^Right"))


def progress_line(page: Page) -> Locator:
    return page.locator('[data-role="dive-progress"]')


def test_progress_survives_a_reload_and_a_reset_and_is_separate_per_sandbox(page: Page, browser: Browser,
                                                                          site: Site) -> None:
    widget = open_widget(page, "fanin")
    answer_number(widget, 2, "Complete child")
    expect(announced(widget)).to_have_text(re.compile(r"^Right"))
    badge = widget.locator('[data-role="widget-progress"]')
    expect(badge).to_have_text("1 of 11 tour steps reached; 1 of 1 prediction right.")
    page.reload()
    widget = region(page, "fanin")
    expect(widget.locator('[data-role="widget-progress"]')).to_have_text(
        "1 of 11 tour steps reached; 1 of 1 prediction right."
    )
    widget.get_by_role("button", name="Reset", exact=True).click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Reset")
    expect(widget.locator('[data-role="widget-progress"]')).to_have_text(
        "1 of 11 tour steps reached; 1 of 1 prediction right."
    )
    # the fan-in's whole tour (server/widgets/fanin.py `tour`), click by click
    for slug, label in (("complete-child", "Complete child"), ("redeliver", "Redeliver last completion"),
                        ("claim", "Claim"), ("stale", "Complete with a stale token"),
                        ("lapse", "Let the lease lapse"), ("claim", "Claim"), ("late", "Send the late completion"),
                        ("complete-child", "Complete child"), ("claim", "Claim"),
                        ("lapse", "Let the lease lapse"), ("late", "Send the late completion")):
        widget.get_by_role("button", name=label, exact=True).click()
        expect(widget.locator('[data-role="outcome"]')).to_have_attribute("data-outcome-of", slug)
    expect(widget.locator('[data-role="widget-progress"]')).to_contain_text("Done: every step of its tour reached")
    expect(progress_line(page)).to_contain_text(re.compile(r"1 of \d+ widgets done, 1 of 1 prediction right"))

    other = browser.new_context(base_url=site.url)
    try:
        stranger = other.new_page()
        stranger.goto(FANIN_DIVE)
        expect(progress_line(stranger)).to_contain_text(re.compile(r"0 of \d+ widgets done"))
        expect(region(stranger, "fanin").locator('[data-role="widget-progress"]')).to_have_text(
            "0 of 11 tour steps reached."
        )
    finally:
        other.close()


def test_the_progress_page_lists_every_dive_and_start_over_forgets_it(page: Page) -> None:
    widget = open_widget(page, "fanin")
    answer_number(widget, 7, "Complete child")
    expect(announced(widget)).to_have_text(re.compile(r"^Not quite"))
    page.goto("/progress")
    expect(page.get_by_role("heading", name="Your progress", level=1)).to_be_visible()
    fanin_row = page.locator('tr[data-progress-of="fanin"]')
    expect(fanin_row).to_contain_text("1 of 11 steps")
    expect(fanin_row).to_contain_text("0 of 1")
    expect(fanin_row).to_contain_text("Not quite: you said 7")
    for path in (
        "/flows/parent-and-children", "/flows/reading-the-results", "/flows/cross-queue", "/batches/bulk-flows",
    ):
        expect(page.locator(f'section[data-dive="{path}"]')).to_have_count(1)
    page.get_by_role("button", name="Start over").click()
    expect(page).to_have_url(re.compile(r"/progress$"))
    expect(page.locator('tr[data-progress-of="fanin"]')).to_contain_text("0 of 11 steps")
    page.goto("/")
    expect(page.locator('[data-role="dive-progress-summary"]').first).to_contain_text(
        re.compile(r"0 of \d+ widgets done")
    )
