"""The tree in Chromium on a real Valkey: the walk lands parent first and
the completions release it level by level, on two pages of one sandbox; each
word checked on the page is checked against the keys Valkey holds."""

from __future__ import annotations

from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.branch_helpers import key, open_widget, outcome, press
from tests.e2e.conftest import Site
from tests.e2e.dive03 import queue

W = "tree"


def test_the_walk_lands_parent_first_and_the_other_page_draws_each_node(context: BrowserContext, site: Site) -> None:
    page = context.new_page()
    one = open_widget(page, W)
    two = open_widget(context.new_page(), W)
    r, tree = site.redis(), queue(site, page, "tree")
    expect(two.locator('[data-role="readout"]')).to_contain_text("Before the walk")
    expect(two.get_by_role("button", name="Previous node")).to_be_disabled()
    press(one, "Next node")
    expect(two.locator('[data-role="deps-JOBtree"]')).to_have_text(":dependencies = 2")
    press(two, "Next node")
    expect(one.locator('[data-role="state-JOBbranch"]')).to_have_text("awaiting_children")
    expect(outcome(one)).to_contain_text("Node 2 of 5, JOBbranch: held as a parent")
    assert r.hget(key(tree, "job:JOBbranch"), "parent") == "JOBtree"
    assert r.get(key(tree, "job:JOBbranch:dependencies")) == "2" and r.zcard(key(tree, "pending")) == 0
    press(one, "Previous node")
    expect(two.locator('[data-role="state-JOBbranch"]')).to_have_text("not landed")
    assert not r.exists(key(tree, "job:JOBbranch"))


def test_the_tree_releases_level_by_level_and_a_finished_tree_says_so(page: Page, site: Site) -> None:
    widget = open_widget(page, W)
    r, tree = site.redis(), queue(site, page, "tree")
    press(widget, "Walk the whole tree")
    expect(outcome(widget)).to_contain_text("returned (JOBtree, [JOBbranch, JOBtwig])")
    expect(widget.get_by_role("button", name="Next node")).to_be_disabled()
    press(widget, "Complete the deepest level")
    expect(widget.locator('[data-role="state-JOBbranch"]')).to_have_text("pending")
    expect(widget.locator('[data-role="state-JOBtree"]')).to_have_text("awaiting_children")
    assert r.zrange(key(tree, "pending"), 0, -1) == ["JOBbranch", "JOBtwig"]
    press(widget, "Complete the deepest level")
    expect(widget.locator('[data-role="state-JOBtree"]')).to_have_text("pending")
    assert r.zrange(key(tree, "pending"), 0, -1) == ["JOBtree"]
    assert r.hgetall(key(tree, "job:JOBtree:processed")) == {"JOBbranch": "JOBbranch done", "JOBtwig": "JOBtwig done"}
    press(widget, "Complete the deepest level")
    expect(outcome(widget)).to_contain_text("the root JOBtree was released and waits in pending itself")


def test_the_tree_step_link_replays_the_walk_and_the_first_level(page: Page, site: Site) -> None:
    widget = open_widget(page, W, "#tree-step=6")
    expect(outcome(widget)).to_contain_text("Step 6 of 7 (The leaves' completions released JOBbranch into pending)")
    expect(widget.locator('[data-role="state-JOBbranch"]')).to_have_text("pending")
    tree = queue(site, page, "tree")
    assert site.redis().hget(key(tree, "job:JOBbranch"), "state") == "pending"
    assert site.redis().get(key(tree, "job:JOBtree:dependencies")) == "2"
