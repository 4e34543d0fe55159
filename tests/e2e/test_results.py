"""The results reader in Chromium on the real site: the answers on the page are
the reads' answers, checked against the keys read back from Valkey here; two
pages of one sandbox paint the same reads."""

from __future__ import annotations

import re

from itsdangerous import URLSafeSerializer
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import region

DIVE = "/flows/reading-the-results"
PARENT = "JOBquote"


def open_reader(page: Page, hash_: str = "") -> Locator:
    page.goto(DIVE + hash_)
    widget = region(page, "results")
    expect(widget).to_have_class(re.compile(r"\bis-live\b"))
    expect(widget.locator('[data-role="readout"]')).not_to_have_text(re.compile(r"^(Reading the keys…)?$"))
    return widget


def parent_key(context: BrowserContext, suffix: str = "") -> str:
    raw = next(c["value"] for c in context.cookies() if c["name"] == "emqlab_sandbox")
    sandbox = URLSafeSerializer("unused", salt="emqlab-sandbox").loads_unsafe(raw)[1]
    return f"emq:{{{sandbox}.results}}:job:{PARENT}{suffix}"


def press(widget: Locator, name: str) -> None:
    widget.get_by_role("button", name=name, exact=True).click()


def test_complete_fail_and_read_show_the_three_answers_valkey_holds(page: Page, site: Site) -> None:
    widget = open_reader(page)
    deps = widget.locator('[data-role="dependencies"]')
    expect(deps).to_have_text("3")
    press(widget, "Complete child")
    expect(deps).to_have_text("2")
    press(widget, "Fail child at the cap")
    expect(deps).to_have_text("1")
    expect(widget.locator('[data-role="readout"]')).to_have_text(
        "1 of 3 children complete, 1 ignored → :dependencies = 1; "
        "the parent stays held (awaiting_children), in no state set")
    press(widget, "Read the results")
    expect(widget.locator('[data-role="outcome"]')).to_have_text(
        "The reads answered children_values → {JOBleg1: subtotal 40.00}, dependencies → 1, "
        "ignored_failures → {JOBleg2: carrier API timed out}; no key changed (DUMPs equal).")
    r = site.redis()
    values, ignored = r.hgetall(parent_key(page.context, ":processed")), r.hgetall(parent_key(page.context, ":ignored"))
    assert values == {"JOBleg1": "subtotal 40.00"} and ignored == {"JOBleg2": "carrier API timed out"}
    expect(widget.locator('[data-role="read-values"]')).to_have_text("{JOBleg1: subtotal 40.00}")
    expect(widget.locator('[data-role="read-dependencies"]')).to_have_text(r.get(parent_key(page.context,
                                                                                            ":dependencies")))
    expect(widget.locator('[data-role="read-ignored"]')).to_have_text("{JOBleg2: carrier API timed out}")
    expect(widget.locator('[data-role="read-note"]')).to_contain_text("Valkey still holds exactly this.")


def test_the_last_read_is_marked_behind_once_valkey_moves_on(page: Page) -> None:
    widget = open_reader(page)
    press(widget, "Read the results")
    expect(widget.locator('[data-role="read-dependencies"]')).to_have_text("3")
    press(widget, "Complete child")
    expect(widget.locator('[data-role="read-note"]')).to_contain_text("Valkey has moved on since this read")


def test_the_last_child_releases_the_parent_and_reset_lands_the_flow_again(page: Page, site: Site) -> None:
    widget = open_reader(page, "#results-step=4")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Step 4 of 5 (The last child released the parent)")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("pending")
    assert site.redis().hget(parent_key(page.context), "state") == "pending"
    press(widget, "Complete child")
    expect(widget.locator('[data-role="outcome"]')).to_have_text(
        "Every child has been counted and the parent released: press Reset to start again.")
    press(widget, "Reset")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("3")
    assert site.redis().hget(parent_key(page.context), "state") == "awaiting_children"


def test_two_pages_of_one_sandbox_paint_the_same_reads(context: BrowserContext) -> None:
    first, second = context.new_page(), context.new_page()
    mine, other = open_reader(first), open_reader(second)
    press(mine, "Fail child at the cap")
    expect(other.locator('[data-role="dependencies"]')).to_have_text("2")
    press(other, "Read the results")
    expect(mine.locator('[data-role="read-ignored"]')).to_have_text("{JOBleg1: carrier API timed out}")
    expect(mine.locator('[data-role="outcome"]')).to_have_text(re.compile(
        r"^From another page of this sandbox: The reads answered children_values → \{\} \(empty\), dependencies → 2"))


def test_without_javascript_the_reader_shows_what_the_reads_returned_as_valkey_holds_it(browser: Browser,
                                                                                         site: Site) -> None:
    """The page without JavaScript is the same drawing as the live widget: after a completion, a
    death at the cap and the reads (posted here as a tool would), it shows their answers."""
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(DIVE)
        for slug in ("complete-child", "fail-child", "read"):
            assert context.request.post(f"{site.url}/api/widgets/results/{slug}", data={},
                                        headers={"Origin": site.url}).ok
        page.goto(DIVE)
        widget = region(page, "results")
        expect(widget.locator('[data-role="read-values"]')).to_have_text("{JOBleg1: subtotal 40.00}")
        expect(widget.locator('[data-role="read-ignored"]')).to_have_text("{JOBleg2: carrier API timed out}")
        expect(widget.locator('[data-role="read-dependencies"]')).to_have_text("1")
        expect(widget.locator('[data-role="readout"]')).to_contain_text("1 of 3 children complete, 1 ignored")
    finally:
        context.close()


def test_the_dives_questions_are_answered_on_the_page_and_judged_by_valkey(page: Page, site: Site) -> None:
    widget = open_reader(page)
    death = widget.locator('fieldset[data-question="deps-after-death"]')
    expect(death.locator("legend")).to_have_text(re.compile(r"^Predict: a child dies at its cap"))
    death.locator('input[type="number"]').fill("3")
    press(widget, "Fail child at the cap")
    verdict = widget.locator('[data-role="outcome"] .verdict')
    # the verdict first (the action has then run), then the counter Valkey holds after it
    expect(verdict).to_have_text(re.compile(r"^Not quite: you said 3; Valkey holds :dependencies = \d+\. "))
    counter = site.redis().get(parent_key(page.context, ":dependencies"))
    expect(verdict).to_have_text(re.compile(rf"^Not quite: you said 3; Valkey holds :dependencies = {counter}\. "))
    read = widget.locator('fieldset[data-question="read-dependencies"]')
    read.locator('input[type="number"]').fill(str(counter))
    press(widget, "Read the results")
    expect(verdict).to_have_text(f"Right: Valkey holds a counter of {counter}, which dependencies() returned.")
