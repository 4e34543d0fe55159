"""Without JavaScript: each widget is the same drawing the live page morphs in, each exercise a form that posts.

The server draws every widget from the snapshot it reads from Valkey
(site/templates/widgets/_<name>.html): the page without JavaScript shows the
keys, the readout and the picture as Valkey holds them now, without the
controls it cannot run; on a first visit, from the specimen (test_first_paint.py).
The widgets and the exercises come from the code and the course.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import OWN_VER, THE_COURSE, WIDGETS, region, wait_until_live

EXERCISES = [(page.path, placement.options["name"]) for page, placement in THE_COURSE.placements()
             if placement.name == "exercise"]


@pytest.fixture(scope="module")
def still_page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    page = context.new_page()
    # the reader's own sandbox: the cookie its first page set (a first visit's page is drawn from
    # the specimen instead, at ver 0: test_first_paint.py), and every page after lands its widgets
    page.goto("/")
    yield page
    context.close()


@pytest.mark.parametrize("name", list(WIDGETS))
def test_every_widget_shows_the_state_valkey_holds_without_its_controls(still_page: Page, name: str) -> None:
    still_page.goto(WIDGETS[name].dive)
    box = region(still_page, name)
    expect(box).to_have_attribute("data-ver", OWN_VER)
    # the controls cannot run without JavaScript, so they are not shown
    controls = box.locator(".controls")
    assert controls.count() >= 1
    for i in range(controls.count()):
        expect(controls.nth(i)).to_be_hidden()
    expect(box.locator('[data-role="readout"]')).to_be_visible()
    expect(box.locator('[data-role="readout"]')).not_to_have_text(re.compile(r"^(Reading the keys.*)?$"))
    # the keys as Valkey holds them, each queue named as the learner writes it (no sandbox id)
    parts = WIDGETS[name].widget.queue_parts
    expect(box.locator('[data-role="keys"] table.keys caption')).to_have_text(
        [re.compile(rf"^queue {re.escape(part)} · hash slot \d+") for part in parts])
    for key in box.locator('[data-role="keys"] tr[data-key]').evaluate_all("(rows) => rows.map((r) => r.dataset.key)"):
        assert any(key.startswith(f"emq:{{{part}}}:") for part in parts), key
    expect(box.locator('[data-role="checklist"] li')).to_have_count(len(WIDGETS[name].widget.tour))


def test_with_javascript_the_same_drawing_gets_its_controls(page: Page) -> None:
    name = next(iter(WIDGETS))
    page.goto(WIDGETS[name].dive)
    wait_until_live(page)
    box = region(page, name)
    expect(box.locator("button[data-action].primary")).to_be_visible()


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
