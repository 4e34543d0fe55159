"""The tree without JavaScript, in Chromium on a real Valkey: each press posted
as a tool would, each page load the server's drawing of the keys after it:
walked parent first, node by node, then released level by level (the tree's
live tests are tests/e2e/test_tree.py; the ledger's own batch, once here, is
tests/e2e/test_ledger.py)."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region

TREE = "tree"


def test_the_tree_without_javascript_walks_parent_first_and_releases_level_by_level(
    browser: Browser, site: Site
) -> None:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)

    def press(slug: str) -> str:
        assert context.request.post(f"{site.url}/api/widgets/{TREE}/{slug}", data={},
                                    headers={"Origin": site.url}).ok
        page.goto(WIDGETS[TREE].dive)
        return region(page, TREE).locator('[data-role="outcome"]').inner_text()

    try:
        page = context.new_page()
        page.goto(WIDGETS[TREE].dive)
        press("reset")
        outcomes = [press("next") for _ in range(5)]
        walked = [m.group(1) for text in outcomes if (m := re.match(r"Node \d+ of \d+, (JOB\w+)", text))]
        # parent first: the root, then the inner node, its leaves, then the root's other child
        assert walked == ["JOBtree", "JOBbranch", "JOBleaf1", "JOBleaf2", "JOBtwig"], walked
        assert "held as a parent" in outcomes[1] and "a child of JOBtree" in outcomes[1]
        outcomes = [press("complete-level") for _ in range(3)]
        released = [m.group(1) for text in outcomes if (m := re.search(r"(JOB\w+) was released into pending", text))]
        assert released == ["JOBbranch", "JOBtree"], outcomes
        expect(region(page, TREE).locator('[data-role="state-JOBtree"]')).to_have_text("pending")
        expect(region(page, TREE).locator('[data-role="deps-JOBtree"]')).to_have_text(":dependencies = 0")
    finally:
        context.close()
