"""The tree widget in Chromium on a real Valkey: the walk parent first,
release level by level (the ledger's own batch is in tests/e2e/test_ledger.py).
Each test reads the page's words AND the keys back from Valkey."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.branch_helpers import key, open_widget, outcome, press, queue_of
from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region

# -- tree -------------------------------------------------------------------------


def test_the_tree_walk_lands_parent_first_and_the_inner_node_is_held_and_counted(page: Page, site: Site) -> None:
    widget = open_widget(page, "tree")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("Before the walk")
    press(widget, "Next node")
    expect(outcome(widget)).to_contain_text("Node 1 of 5, JOBtree: held as a parent")
    press(widget, "Next node")
    expect(outcome(widget)).to_contain_text("Node 2 of 5, JOBbranch: held as a parent (state awaiting_children, "
                                            ":dependencies = 2, in no state set) and landed as a child of JOBtree")
    expect(widget.locator('[data-role="deps-JOBtree"]')).to_have_text(":dependencies = 2")
    q, r = queue_of(page, "tree"), site.redis()
    assert r.hget(key(q, "job:JOBbranch"), "parent") == "JOBtree"
    assert r.get(key(q, "job:JOBbranch:dependencies")) == "2"
    assert r.zcard(key(q, "pending")) == 0
    press(widget, "Previous node")
    expect(widget.locator('[data-role="state-JOBbranch"]')).to_have_text("not landed")
    assert not r.exists(key(q, "job:JOBbranch"))


def test_the_tree_releases_level_by_level(page: Page, site: Site) -> None:
    widget = open_widget(page, "tree")
    press(widget, "Walk the whole tree")
    expect(outcome(widget)).to_contain_text("returned (JOBtree, [JOBbranch, JOBtwig])")
    press(widget, "Complete the deepest level")
    expect(outcome(widget)).to_contain_text("Completed level 2 (JOBleaf1, JOBleaf2): "
                                            "JOBbranch's :dependencies 2 → 0, released into pending")
    expect(widget.locator('[data-role="state-JOBbranch"]')).to_have_text("pending")
    expect(widget.locator('[data-role="state-JOBtree"]')).to_have_text("awaiting_children")
    q, r = queue_of(page, "tree"), site.redis()
    assert r.zrange(key(q, "pending"), 0, -1) == ["JOBbranch", "JOBtwig"]
    assert r.get(key(q, "job:JOBtree:dependencies")) == "2"
    press(widget, "Complete the deepest level")
    expect(outcome(widget)).to_contain_text("JOBtree's :dependencies 2 → 0, released into pending")
    expect(widget.locator('[data-role="state-JOBtree"]')).to_have_text("pending")
    assert r.zrange(key(q, "pending"), 0, -1) == ["JOBtree"]
    assert r.hgetall(key(q, "job:JOBtree:processed")) == {"JOBbranch": "JOBbranch done", "JOBtwig": "JOBtwig done"}


def test_the_tree_step_link_replays_the_first_level_of_completions(page: Page, site: Site) -> None:
    widget = open_widget(page, "tree", "#tree-step=6")
    expect(outcome(widget)).to_contain_text("Step 6 of 7 (Complete the deepest level)")
    q, r = queue_of(page, "tree"), site.redis()
    assert r.hget(key(q, "job:JOBbranch"), "state") == "pending"
    assert r.get(key(q, "job:JOBtree:dependencies")) == "2"


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
