"""Without JavaScript each widget is a static trace: a table of the states of
a real run on Valkey, rendered by the server (server/widgets/traces.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region


@pytest.fixture
def still_page(browser: Browser, site: Site) -> Iterator[Page]:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


def trace_of(page: Page, widget: str) -> Locator:
    page.goto(WIDGETS[widget][0])
    box = region(page, widget)
    table = box.get_by_role("table", name=re.compile("^A recorded run on Valkey"))
    expect(table).to_be_visible()
    # the live controls cannot run without JavaScript, so they are not shown
    controls = box.locator(".controls")
    assert controls.count() >= 1
    for i in range(controls.count()):
        expect(controls.nth(i)).to_be_hidden()
    expect(box.locator('[data-role="readout"]')).to_be_hidden()
    return table


def row(table: Locator, step: int) -> Locator:
    return table.locator(f'tbody tr[data-step="{step}"]')


@pytest.mark.parametrize("widget", list(WIDGETS))
def test_every_widget_shows_its_recorded_run_as_a_table(still_page: Page, widget: str) -> None:
    table = trace_of(still_page, widget)
    expect(table.get_by_role("columnheader")).to_have_count(2)
    assert table.locator("tbody tr").count() >= 4
    expect(row(table, 0)).to_contain_text("Start")


def test_the_fan_in_trace_shows_the_claim_the_fence_and_the_skipped_fan_in(still_page: Page) -> None:
    table = trace_of(still_page, "fanin")
    expect(row(table, 0)).to_contain_text(":dependencies = 3")
    expect(row(table, 1)).to_contain_text("job:JOBparent:dependencies 3 → 2")
    expect(row(table, 2)).to_contain_text("did not move")
    expect(row(table, 3)).to_contain_text("in active: JOBchild2 (token 1)")
    expect(row(table, 4)).to_contain_text("EMQSTALE complete token mismatch")
    expect(row(table, 6)).to_contain_text("token 2")
    expect(row(table, 7)).to_contain_text("EMQSTALE complete token mismatch")
    expect(row(table, 11)).to_contain_text("skipped the fan-in")
    expect(row(table, 11)).to_contain_text(":dependencies = 1")


def test_the_stepper_trace_shows_each_move_and_the_emqkind_refusal(still_page: Page) -> None:
    table = trace_of(still_page, "enqueue-stepper")
    expect(row(table, 2)).to_contain_text("land each child")
    expect(row(table, 3)).to_contain_text("job:JOBparent")
    expect(row(table, 3)).to_contain_text("state=awaiting_children")
    expect(row(table, 4)).to_contain_text("job:JOBparent:dependencies")
    expect(row(table, 6)).to_contain_text("EMQKIND job id must be JOB-namespaced")
    expect(row(table, 6)).to_have_attribute("data-kind", "refused")


def test_the_outbox_trace_ends_with_the_parent_released(still_page: Page) -> None:
    table = trace_of(still_page, "outbox")
    expect(row(table, 1)).to_contain_text("mail · flow:outbox")
    expect(row(table, 6)).to_contain_text("teaching action")
    expect(row(table, 11)).to_contain_text(":dependencies = 0")
    expect(row(table, 11)).to_contain_text("the parent is released")


def test_the_failure_policy_trace_shows_both_policies_the_pump_and_the_mixed_flow(still_page: Page) -> None:
    table = trace_of(still_page, "failure-policy")
    expect(row(table, 1)).to_contain_text("every child on fp")
    expect(row(table, 2)).to_contain_text("parent_policy fp")
    expect(row(table, 2)).to_contain_text("state failed, in dead")
    expect(row(table, 4)).to_contain_text("nothing will release it")
    expect(row(table, 5)).to_contain_text("appended a failure entry")
    expect(row(table, 6)).to_contain_text("applied fp on JOBlinked's slot")
    expect(row(table, 7)).to_contain_text("every child on id")
    expect(row(table, 8)).to_contain_text(":ignored")
    expect(row(table, 10)).to_contain_text("the parent is released")
    expect(row(table, 12)).to_contain_text("applied id on JOBlinked's slot")
    expect(row(table, 14)).to_contain_text("does not read the policy token")
    expect(row(table, 15)).to_contain_text("parent_policy id (ignore the dependency)")
    expect(row(table, 16)).to_contain_text("resolves to fp")


def test_with_javascript_the_trace_folds_away_under_the_live_widget(page: Page) -> None:
    page.goto(WIDGETS["fanin"][0])
    box = region(page, "fanin")
    expect(box).to_have_class(re.compile(r"\bis-live\b"))
    expect(box.get_by_role("button", name="Complete child")).to_be_visible()
    expect(box.get_by_role("table", name=re.compile("^A recorded run on Valkey"))).to_be_hidden()
    box.get_by_text("The whole run at a glance").click()
    expect(box.get_by_role("table", name=re.compile("^A recorded run on Valkey"))).to_be_visible()
