"""The ledger's own batch in Chromium on a real Valkey: a learner's batch and
its refusals (the tree's half is tests/e2e/test_tree.py). Each test reads the
page's words AND the keys back from Valkey."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.branch_helpers import key, open_widget, outcome, press, queue_of
from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region

# -- the ledger's own batch -------------------------------------------------------------


def ledger_keys(site: Site, page: Page) -> dict[str, bytes | None]:
    r = site.redis()
    found = {}
    for n in range(3):
        q = queue_of(page, "ledger", n)
        for name in r.scan_iter(match=f"emq:{{{q}}}:*"):
            found[name] = r.dump(name)
    return found


def test_your_own_batch_lands_in_input_order_and_shows_what_the_refused_flow_left(page: Page, site: Site) -> None:
    widget = open_widget(page, "ledger")
    own = widget.get_by_role("group", name="Your own batch")
    own.get_by_label("One bad id").select_option("kind")
    own.get_by_role("button", name="Run your batch").click()
    expect(outcome(widget)).to_contain_text("add_bulk call ran your 3 flows and returned 2 entries: JOBmine1, JOBmine7")
    entries = widget.locator('[data-role="result"] li')
    expect(entries).to_have_text(["(JOBmine1, [JOBmine2, JOBmine3])", "(JOBmine7, [JOBmine8])"])
    expect(widget.locator(".ledger-pick button")).to_have_count(3)
    press(widget, "Flow 2")
    expect(widget.locator('[data-role="picked"]')).to_contain_text("Flow 2 (cross-queue) · not in the result")
    expect(widget.locator('[data-role="picked"]')).to_contain_text("parent JOBmine4: awaiting_children")
    orders, billing = queue_of(page, "ledger", 0), queue_of(page, "ledger", 2)
    r = site.redis()
    assert r.hget(key(orders, "job:JOBmine4"), "state") == "awaiting_children"
    assert r.zrange(key(billing, "pending"), 0, -1) == ["JOBmine5"]
    assert not r.exists(key(billing, "job:TASKmine6"))
    assert r.zrange(key(orders, "pending"), 0, -1) == ["JOBmine2", "JOBmine8"]


def test_an_ill_formed_id_in_your_own_batch_is_refused_naming_the_field_and_nothing_is_written(
        page: Page, site: Site) -> None:
    widget = open_widget(page, "ledger")
    press(widget, "Next flow")
    expect(widget.locator('[data-role="result"] li')).to_have_count(1)
    before = ledger_keys(site, page)
    own = widget.get_by_role("group", name="Your own batch")
    own.get_by_label("One bad id").select_option("gate")
    own.get_by_role("button", name="Run your batch").click()
    status = widget.locator('[data-role="status"]')
    expect(status).to_contain_text('flows[1].children[1].id = "JOBmine6 bad}" is not a well-formed id')
    assert ledger_keys(site, page) == before
    # an unknown queue and a batch over the caps: 400s naming the field, nothing written
    flow = {
        "parent": {"id": "JOBz1", "payload": "p"},
        "children": [{"id": "JOBz2", "payload": "c", "queue": "payments"}],
    }
    answer = page.request.post("/api/widgets/ledger/custom-batch", data={"flows": [flow]})
    assert answer.status == 400 and answer.json()["error"].startswith("flows[0].children[0]: 'queue' must be one of")
    many = [{"parent": {"id": f"JOBm{i}", "payload": "p"}, "children": [{"id": f"JOBc{i}", "payload": "c"}]}
            for i in range(17)]
    answer = page.request.post("/api/widgets/ledger/custom-batch", data={"flows": many})
    assert answer.status == 400 and "'flows' must hold 1 to 16 flows" in answer.json()["error"]
    assert ledger_keys(site, page) == before


def test_the_tree_trace_without_javascript_shows_the_walk_and_both_levels(browser, site: Site) -> None:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(WIDGETS["tree"][0])
        table = region(page, "tree").get_by_role("table", name=re.compile("^A recorded run on Valkey"))
        expect(table.locator('tbody tr[data-step="2"]')).to_contain_text("landed as a child of JOBtree")
        expect(table.locator('tbody tr[data-step="6"]')).to_contain_text("Completed level 2")
        expect(table.locator('tbody tr[data-step="7"]')).to_contain_text("JOBtree's :dependencies 2 → 0")
    finally:
        context.close()
