"""The tree's recorded run without JavaScript, in Chromium on a real Valkey
(the tree's live tests are tests/e2e/test_tree.py; the ledger's own batch,
once here, is tests/e2e/test_ledger.py)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region


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
