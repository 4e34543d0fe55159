"""The tree's recorded run without JavaScript, in Chromium on a real Valkey:
walked parent first, node by node, then released level by level (the tree's
live tests are tests/e2e/test_tree.py; the ledger's own batch, once here, is
tests/e2e/test_ledger.py)."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region

TREE = "tree"


def test_the_tree_trace_without_javascript_walks_parent_first_and_releases_level_by_level(
    browser: Browser, site: Site
) -> None:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(WIDGETS[TREE].dive)
        outcomes = region(page, TREE).locator('[data-role="trace"] tbody tr .trace-outcome').all_inner_texts()
        walked = [m.group(1) for text in outcomes if (m := re.match(r"Node \d+ of \d+, (JOB\w+)", text))]
        # parent first: the root, then the inner node, its leaves, then the root's other child
        assert walked == ["JOBtree", "JOBbranch", "JOBleaf1", "JOBleaf2", "JOBtwig"], walked
        inner = next(text for text in outcomes if text.startswith("Node 2"))
        assert "held as a parent" in inner and "a child of JOBtree" in inner
        released = [m.group(1) for text in outcomes if (m := re.search(r"(JOB\w+) was released into pending", text))]
        assert released == ["JOBbranch", "JOBtree"], outcomes
        expect(region(page, TREE).locator('[data-role="trace"] tbody tr').last).to_contain_text(
            re.compile(r"JOBtree: pending, in pending, :dependencies = 0"))
    finally:
        context.close()
