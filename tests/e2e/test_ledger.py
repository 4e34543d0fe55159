"""The bulk ledger in Chromium on the real site: every word checked here came
from Valkey (the keys are read back beside the page), and two pages of one
sandbox paint the same ledger."""

from __future__ import annotations

import json
import re

from itsdangerous import URLSafeSerializer
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import region

DIVE = "/batches/bulk-flows"
J = "JOB0KHTOWnGLuJ"


def open_ledger(page: Page, hash_: str = "") -> Locator:
    page.goto(DIVE + hash_)
    widget = region(page, "ledger")
    expect(widget).to_have_class(re.compile(r"\bis-live\b"))
    expect(widget.locator('[data-role="readout"]')).not_to_have_text(re.compile(r"^(Reading the keys…)?$"))
    return widget


def sandbox_of(context: BrowserContext) -> str:
    """The page's sandbox: the id inside its cookie (read, not verified: the site signs it)."""
    raw = next(c["value"] for c in context.cookies() if c["name"] == "emqlab_sandbox")
    return str(URLSafeSerializer("unused", salt="emqlab-sandbox").loads_unsafe(raw)[1])


def key(sandbox: str, rel: str, suffix: str) -> str:
    return f"emq:{{{sandbox}.ledger.{rel}}}:{suffix}"


def press(widget: Locator, name: str) -> None:
    widget.get_by_role("button", name=name, exact=True).click()


def card(widget: Locator, n: int) -> Locator:
    return widget.locator(f'.ledger-flows [data-flow="{n}"]')


def test_stepping_the_ledger_shows_each_flow_as_valkey_holds_it(page: Page, site: Site) -> None:
    widget = open_ledger(page)
    r, sandbox = site.redis(), sandbox_of(page.context)
    readout, result = widget.locator('[data-role="readout"]'), widget.locator('[data-role="result"]')
    expect(readout).to_have_text("Before flow 1: the result list is empty and no flow's parent has a row.")
    expect(widget.get_by_role("button", name="Previous flow")).to_be_disabled()
    press(widget, "Next flow")
    expect(result.locator("li")).to_have_text(["(JOB0KHTOWnGLuA, [JOB0KHTOWnGLuB, JOB0KHTOWnGLuC])"])
    expect(card(widget, 1).locator('[data-role="parent-state"]')).to_have_text(
        r.hget(key(sandbox, "orders", "job:JOB0KHTOWnGLuA"), "state") or "no row")
    for _ in range(3):
        press(widget, "Next flow")
        expect(readout).to_contain_text(re.compile(r"^Flow \d of 4"))
    expect(readout).to_have_text("Flow 4 of 4 added one at a time: 2 entries in the result; "
                                 "parents — 1: held, 2: held, 3: no row, 4: held.")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("EMQKIND job id must be JOB-namespaced")
    expect(card(widget, 3).locator('[data-role="parent-state"]')).to_have_text("no row")
    expect(card(widget, 4)).to_contain_text("JOB0KHTOWnGLuL (ledger.billing) · pending, in pending")
    expect(card(widget, 4)).to_contain_text("TASK0KHTOWnGLuK (ledger.billing) · no row")
    expect(widget.get_by_role("button", name="Next flow")).to_be_disabled()
    assert r.hget(key(sandbox, "orders", f"job:{J}"), "state") == "awaiting_children"
    assert r.zrange(key(sandbox, "billing", "pending"), 0, -1) == ["JOB0KHTOWnGLuL"]
    assert not r.exists(key(sandbox, "orders", "job:JOB0KHTOWnGLuG"))


def test_run_the_batch_says_it_cleared_and_flow_4_is_retried_and_released_once(page: Page, site: Site) -> None:
    widget = open_ledger(page)
    r, sandbox = site.redis(), sandbox_of(page.context)
    press(widget, "Next flow")
    expect(widget.locator('[data-role="result"] li')).to_have_count(1)
    press(widget, "Run the batch")
    expect(widget.locator('[data-role="outcome"]')).to_have_text(
        "Cleared the ledger, then one add_bulk over the 4 flows returned 2 entries in input order: "
        "JOB0KHTOWnGLuA, JOB0KHTOWnGLuD.")
    expect(card(widget, 4).locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    press(widget, "Retry flow 4")
    expect(card(widget, 4)).to_contain_text("JOB0KHTOWnGLuK (ledger.billing) · pending, in pending")
    expect(widget.locator(".ledger-retry")).to_have_text(
        "the retry of flow 4 returned (JOB0KHTOWnGLuJ, [JOB0KHTOWnGLuL, JOB0KHTOWnGLuK])")
    press(widget, "Complete the retried children")
    expect(card(widget, 4).locator('[data-role="parent-state"]')).to_have_text("pending")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("one Pump tick delivered 2 completions")
    assert r.hget(key(sandbox, "orders", f"job:{J}"), "state") == "pending"
    assert r.hgetall(key(sandbox, "orders", f"job:{J}:processed")) == {
        "JOB0KHTOWnGLuL": "billed JOB0KHTOWnGLuL", "JOB0KHTOWnGLuK": "billed JOB0KHTOWnGLuK"}
    expect(widget.locator('[data-role="picked"]')).to_contain_text(
        f"parent {J}: pending, :dependencies = 0, in pending")


def test_try_an_ill_formed_id_is_refused_before_any_write(page: Page, site: Site) -> None:
    widget = open_ledger(page)
    press(widget, "Next flow")
    count, panel = widget.locator('[data-role="raw-count"]'), widget.locator('[data-role="keys"]')
    expect(count).to_have_text(re.compile(r"^\(5 keys"))
    shown = panel.text_content()
    press(widget, "Try an ill-formed id")
    expect(widget.locator('[data-role="outcome"]')).to_have_text(
        "add_bulk raised BadId for 'JOB bad}' in flow 2 before any write: flow 1, well-formed, did not land "
        "either; no key changed.")
    expect(count).to_have_text(re.compile(r"^\(5 keys"))
    assert panel.text_content() == shown  # the key panel, drawn from Valkey, holds the same keys and values
    assert not site.redis().exists(key(sandbox_of(page.context), "orders", "job:JOB0KHTOWnGLuM"))


def test_your_own_batch_runs_through_add_bulk_and_an_ill_formed_id_is_refused_by_its_gate(
        page: Page, site: Site) -> None:
    widget = open_ledger(page)
    r, sandbox = site.redis(), sandbox_of(page.context)
    own = widget.get_by_role("group", name="Your own batch")
    own.get_by_label("One bad id").select_option("kind")
    own.get_by_role("button", name="Run your batch").click()
    expect(widget.locator('[data-role="outcome"]')).to_have_text(
        "Cleared the ledger, then one add_bulk over your 3 flows returned 2 entries: JOBmine1, JOBmine7.")
    expect(widget.locator(".ledger-pick button")).to_have_count(3)
    press(widget, "Flow 2")
    expect(widget.get_by_role("button", name="Flow 2")).to_have_attribute("aria-pressed", "true")
    expect(widget.locator('[data-role="picked"]')).to_contain_text(
        "Flow 2 (cross-queue) is not in the result; parent JOBmine4: awaiting_children, :dependencies = 2")
    assert r.hget(key(sandbox, "orders", "job:JOBmine4"), "state") == "awaiting_children"
    assert not r.exists(key(sandbox, "billing", "job:TASKmine6"))

    own.get_by_label("One bad id").select_option("gate")
    own.get_by_role("button", name="Run your batch").click()
    expect(widget.locator('[data-role="outcome"]')).to_contain_text(
        "add_bulk then refused your whole batch before any write: ill-formed job id 'JOBmine6 bad}'")
    expect(widget.locator('[data-role="status"]')).to_have_text("")  # answered 200: the lesson, not a 400
    expect(widget.locator('[data-role="readout"]')).to_contain_text("refused whole by the gate: 0 entries")
    expect(widget.locator('[data-role="raw-count"]')).to_have_text("(0 keys)")
    assert r.keys(f"emq:{{{sandbox}.ledger.*") == []


def test_two_pages_of_one_sandbox_paint_the_same_ledger(context: BrowserContext, site: Site) -> None:
    first, second = context.new_page(), context.new_page()
    mine, other = open_ledger(first), open_ledger(second)
    press(mine, "Run the batch")
    expect(other.locator('[data-role="outcome"]')).to_have_text(re.compile(
        r"^From another page of this sandbox: Cleared the ledger, then one add_bulk over the 4 flows"))
    expect(other.locator('[data-role="result"] li')).to_have_count(2)
    press(other, "Flow 3")
    expect(mine.get_by_role("button", name="Flow 3")).to_have_attribute("aria-pressed", "true")
    expect(mine.locator('[data-role="picked"]')).to_have_text(
        "Flow 3 (same-queue) is not in the result; parent JOB0KHTOWnGLuG: no row; children: JOB0KHTOWnGLuH "
        "(ledger.orders) no row; TASK0KHTOWnGLuI (ledger.orders) no row.")
    assert not site.redis().exists(key(sandbox_of(context), "orders", "job:JOB0KHTOWnGLuG"))


def test_a_ledger_step_link_replays_the_tour_to_that_step(page: Page, site: Site) -> None:
    widget = open_ledger(page, "#ledger-step=5")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Step 5 of 9 (Flow 4 retried by its ids)")
    expect(widget.locator('[data-role="readout"]')).to_have_text(
        "Flow 4 of 4 added one at a time: 2 entries in the result; parents — 1: held, 2: held, 3: no row, 4: held.")
    sandbox = sandbox_of(page.context)
    assert site.redis().zrange(key(sandbox, "billing", "pending"), 0, -1) == ["JOB0KHTOWnGLuK", "JOB0KHTOWnGLuL"]


def test_without_javascript_the_ledger_shows_the_batch_valkey_holds(browser: Browser, site: Site) -> None:
    """The page without JavaScript is the live widget's drawing: after Run the batch (posted as a
    tool would), it lists the result the state API reads from Valkey, entry by entry."""
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(DIVE)
        assert context.request.post(f"{site.url}/api/widgets/ledger/run-batch", data={},
                                    headers={"Origin": site.url}).ok
        state = context.request.get(f"{site.url}/api/widgets/ledger/state").json()["snapshot"]
        page.goto(DIVE)
        widget = region(page, "ledger")
        expect(widget.locator('[data-role="result"] li')).to_have_text(
            [f"({parent}, [{', '.join(children)}])" for parent, children in state["picture"]["result"]])
        expect(widget.locator('[data-role="readout"]')).to_have_text(state["readout"])
    finally:
        context.close()


def test_the_dives_questions_are_answered_on_the_page_and_judged_by_valkey(page: Page, site: Site) -> None:
    widget = open_ledger(page)
    size = widget.locator('fieldset[data-question="ledger-result"]')
    expect(size.locator("legend")).to_have_text("Predict: how long will the result list be after this flow?")
    size.locator('input[type="number"]').fill("1")
    press(widget, "Next flow")
    verdict = widget.locator('[data-role="outcome"] .verdict')
    expect(verdict).to_have_text("Right: Valkey holds a result list of length 1.")
    kept = site.redis().hget(f"lab:{{{sandbox_of(page.context)}.ledger.orders}}:state", "result")
    assert len(json.loads(kept or "[]")) == 1
    gate = widget.locator('fieldset[data-question="ledger-ill-formed"]')
    gate.locator('input[type="number"]').fill("5")
    press(widget, "Try an ill-formed id")
    expect(verdict).to_have_text(
        re.compile(r"^Not quite: you said 5; Valkey holds 0 new keys in the ledger's queues\. That is the first flow"))
