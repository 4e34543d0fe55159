"""Without JavaScript: each widget is its recorded run, each exercise a form that posts.

A widget cannot be driven without JavaScript, so the server shows a table of
its tour, played once on Valkey through the same executor a click takes
(server/widgets/traces.py): one row per press, labelled with the button's
own words, in the tour's order. The widgets, their tours and the exercises
come from the code and the course.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import THE_COURSE, WIDGETS, region, wait_until_live

EXERCISES = [(page.path, placement.options["name"]) for page, placement in THE_COURSE.placements()
             if placement.name == "exercise"]


@pytest.fixture(scope="module")
def still_page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def trace_of(page: Page, widget: str) -> Locator:
    page.goto(WIDGETS[widget].dive)
    box = region(page, widget)
    table = box.get_by_role("table", name=re.compile("^A recorded run on Valkey"))
    expect(table).to_be_visible()
    return table


def pressed_in_the_tour(name: str) -> list[str]:
    widget = WIDGETS[name].widget
    return [widget.actions[slug].label for step in widget.tour for slug, _ in step.replay]


@pytest.mark.parametrize("name", list(WIDGETS))
def test_every_widget_shows_its_tour_as_a_recorded_run_one_row_per_press(still_page: Page, name: str) -> None:
    table = trace_of(still_page, name)
    box = region(still_page, name)
    # the live controls cannot run without JavaScript, so they are not shown
    controls = box.locator(".controls")
    assert controls.count() >= 1
    for i in range(controls.count()):
        expect(controls.nth(i)).to_be_hidden()
    expect(box.locator('[data-role="readout"]')).to_be_hidden()
    expect(table.get_by_role("columnheader")).to_have_count(2)
    rows = table.locator("tbody tr")
    labels = [label.strip() for label in rows.locator("th .trace-step").evaluate_all(
        "(steps) => steps.map((s) => s.parentElement.textContent.replace(s.textContent, ''))")]
    assert labels == ["Start", *pressed_in_the_tour(name)]
    # every row says what happened and what Valkey held after it
    for outcome in rows.locator(".trace-outcome").all_inner_texts():
        assert outcome.strip(), labels
    for readout in rows.locator(".trace-readout").all_inner_texts():
        assert readout.strip(), labels


@pytest.mark.parametrize("name", list(WIDGETS))
def test_a_recorded_run_names_queues_as_the_learner_does(still_page: Page, name: str) -> None:
    """Issue 31: the failure-policy trace showed the recording's internal
    sandbox name in a row's parent_queue; a row names a queue as the
    learner writes it (`failure-policy`, `outbox.orders`)."""
    table = trace_of(still_page, name)
    parts = WIDGETS[name].widget.queue_parts
    for value in table.locator(".trace-value").all_inner_texts():
        for named in re.findall(r'(?:parent_queue|child_queue)(?:=|":")([^,"]*)', value):
            # a long value is cut ("…"): what is left must still begin a queue's name
            assert named in parts or (named.endswith("…") and any(p.startswith(named[:-1]) for p in parts)), (
                named, value)


def test_a_question_in_a_recorded_run_folds_an_answer_that_is_there(still_page: Page) -> None:
    """Each question shown in a recorded run folds "The answer Valkey gave"; the fold holds words."""
    answers = 0
    for name in WIDGETS:
        folds = trace_of(still_page, name).locator("details.trace-answer")
        for i in range(folds.count()):
            answers += 1
            text = folds.nth(i).evaluate("(d) => d.querySelector('p').textContent")
            assert text.strip(), f"{name}: an empty answer under {folds.nth(i).locator('xpath=..').inner_text()[:80]}"
    assert answers > 0


def test_with_javascript_the_trace_folds_away_under_the_live_widget(page: Page) -> None:
    name = next(iter(WIDGETS))
    page.goto(WIDGETS[name].dive)
    wait_until_live(page)
    box = region(page, name)
    expect(box.locator("button[data-action].primary")).to_be_visible()
    table = box.get_by_role("table", name=re.compile("^A recorded run on Valkey"))
    expect(table).to_be_hidden()
    box.get_by_text("The whole run at a glance").click()
    expect(table).to_be_visible()


@pytest.mark.parametrize(("dive", "exercise"), EXERCISES)
def test_every_exercise_is_a_form_that_posts_and_answers_with_its_checks(
    still_page: Page, dive: str, exercise: str
) -> None:
    still_page.goto(dive)
    box = still_page.locator(f'[data-exercise="{exercise}"]')
    checks = box.locator('[data-role="results"] li')
    names = checks.evaluate_all("(items) => items.map((li) => li.dataset.check)")
    assert names
    expect(box.get_by_label("Your script")).not_to_be_empty()
    box.get_by_role("button", name="Run the checks").click()
    expect(still_page.locator(".exercise-summary")).to_have_text(
        re.compile(rf"^\d+ of {len(names)} checks? passed\.$"))
    results = still_page.locator(".exercise-results li")
    expect(results).to_have_count(len(names))
    for text in results.all_inner_texts():
        assert re.search(r"\b(passed|failed)\b", text), text
