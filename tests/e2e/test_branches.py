"""Every branch the prose names, made to happen in Chromium on a real Valkey:
the fan-in's claim and its guards, the states a console or a late worker
leaves behind, the failure policy's other arms, and the end of the tree and
of the outbox. Each test reads the page's words AND the keys back from
Valkey itself (the page's sandbox from its signed cookie)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.branch_helpers import key, open_widget, outcome, press, queue_of
from tests.e2e.conftest import Site

# -- fan-in ---------------------------------------------------------------------


def test_claim_shows_the_child_in_active_with_its_token_and_lease_and_counts_nothing(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claimed JOBchild1: in active with token 1")
    expect(widget.locator('[data-role="pick-child"]')).to_have_value("JOBchild1")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("in active: JOBchild1 (token 1)")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("3")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild1"]
    assert r.hget(key(q, "job:JOBchild1"), "attempts") == "1"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"


def test_a_stale_token_answers_emqstale_and_leaves_dependencies_unchanged(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    press(widget, "Complete with a stale token")
    expect(outcome(widget)).to_contain_text("with token 0 while its row holds 1: complete answered EMQSTALE")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild1"]
    assert r.hget(key(q, "job:JOBchild1"), "state") == "active"


def test_complete_child_completes_the_claimed_child_the_learner_picks(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    press(widget, "Claim")
    picker = widget.locator('[data-role="pick-child"]')
    expect(picker.locator("option")).to_have_count(2)
    picker.select_option("JOBchild2")
    press(widget, "Complete child")
    expect(outcome(widget)).to_contain_text("Completed JOBchild2 with token 1")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("2")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild1"]
    assert r.hgetall(key(q, "job:JOBparent:processed")) == {"JOBchild2": "result of JOBchild2"}


def test_a_late_completion_after_the_lease_lapsed_and_a_second_claim_is_fenced(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    press(widget, "Let the lease lapse")
    expect(outcome(widget)).to_contain_text("requeue_lapsed put it back in pending")
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claimed JOBchild1: in active with token 2")
    press(widget, "Send the late completion")
    expect(outcome(widget)).to_contain_text("(token 1): complete answered EMQSTALE")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert r.hget(key(q, "job:JOBchild1"), "attempts") == "2"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert not r.exists(key(q, "job:JOBparent:processed"))


def test_claim_after_a_late_completion_retired_a_row_drops_the_id_and_takes_the_next(page: Page, site: Site) -> None:
    """Issue 31: the late completion deleted JOBchild1's row but left its id
    in pending, and Claim then made a bare row of it. Claim drops it, says
    so, and takes the next child."""
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    press(widget, "Let the lease lapse")
    press(widget, "Send the late completion")
    expect(outcome(widget)).to_contain_text("complete answered 1; its token matched but it was not in active")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert not r.exists(key(q, "job:JOBchild1"))
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claim dropped JOBchild1 from pending")
    expect(outcome(widget)).to_contain_text("Claimed JOBchild2")
    assert not r.exists(key(q, "job:JOBchild1"))  # no bare row made for the retired id
    assert "JOBchild1" not in r.zrange(key(q, "pending"), 0, -1)
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild2"]


def test_claim_and_complete_child_never_take_the_released_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    for left in ("2", "1", "0"):
        press(widget, "Complete child")
        expect(widget.locator('[data-role="dependencies"]')).to_have_text(left)
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claim takes children only, never the parent")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert r.zrange(key(q, "pending"), 0, -1) == ["JOBparent"]
    assert r.hget(key(q, "job:JOBparent"), "state") == "pending"
    assert r.zcard(key(q, "active")) == 0


def test_a_parent_row_deleted_from_the_console_is_said_with_the_children_still_waiting(page: Page, site: Site) -> None:
    """Issue 31: the fan-in said "No flow in this queue" while Valkey held
    pending children and a counter that Complete child still decremented."""
    widget = open_widget(page, "fanin")
    command = page.get_by_label("Command", exact=True)
    command.fill("DEL emq:{fanin}:job:JOBparent")
    command.press("Enter")
    readout = widget.locator('[data-role="readout"]')
    expect(readout).to_contain_text("The parent's row is gone, yet 3 children still wait")
    expect(readout).not_to_contain_text("No flow in this queue")
    q, r = queue_of(site, page, "fanin"), site.redis()
    assert not r.exists(key(q, "job:JOBparent"))
    assert r.zcard(key(q, "pending")) == 3 and r.get(key(q, "job:JOBparent:dependencies")) == "3"


# -- failure policy -------------------------------------------------------------


def test_a_failure_with_attempts_left_schedules_the_child_and_moves_no_parent_key(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    press(widget, "Fail child with attempts left")
    expect(outcome(widget)).to_contain_text("JOBchild1 failed attempt 1 of 3: fail answered scheduled")
    expect(outcome(widget)).to_contain_text("no policy is applied")
    q, r = queue_of(site, page, "failure-policy"), site.redis()
    assert r.zrange(key(q, "schedule"), 0, -1) == ["JOBchild1"]
    assert r.hget(key(q, "job:JOBparent"), "state") == "awaiting_children"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert r.zcard(key(q, "dead")) == 0


def test_the_mixed_flow_resolves_both_flags_to_id_and_an_unknown_token_to_fp(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    press(widget, "Land a mixed flow")
    expect(outcome(widget)).to_contain_text("Landed a mixed flow")
    q, r = queue_of(site, page, "failure-policy"), site.redis()
    policies = [r.hget(key(q, f"job:JOBchild{i}"), "parent_policy") for i in (1, 2, 3)]
    assert policies[:2] == ["fp", "id"] and policies[2] not in ("fp", "id"), policies
    press(widget, "Fail child with attempts left")
    expect(outcome(widget)).to_contain_text("fail answered scheduled")
    press(widget, "Fail child at the cap")
    expect(outcome(widget)).to_contain_text("JOBchild2 died at its cap")
    expect(outcome(widget)).to_contain_text("parent_policy id: the error went to the parent's :ignored")
    press(widget, "Fail child at the cap")
    expect(outcome(widget)).to_contain_text(f"parent_policy {policies[2]} resolves to fp")
    assert r.hgetall(key(q, "job:JOBparent:ignored")) == {"JOBchild2": "card declined"}
    assert r.hget(key(q, "job:JOBparent"), "state") == "failed"
    # the variant is the learner's choice: Reset lands the mixed flow again
    press(widget, "Reset")
    assert r.hget(key(q, "job:JOBchild3"), "parent_policy") == policies[2]


def test_a_cross_queue_death_travels_through_the_outbox_and_the_pump_fails_the_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    press(widget, "Fail the cross-queue child at the cap")
    expect(outcome(widget)).to_contain_text("appended a failed entry (policy fp) to mail's flow:outbox")
    home, mail, r = queue_of(site, page, "failure-policy"), queue_of(site, page, "failure-policy", 1), site.redis()
    assert r.llen(key(mail, "flow:outbox")) == 1
    assert r.hget(key(home, "job:JOBlinked"), "state") == "awaiting_children"
    press(widget, "Deliver with the Pump")
    expect(outcome(widget)).to_contain_text("The Pump delivered 1 from mail's outbox on JOBlinked's slot")
    assert r.hget(key(home, "job:JOBlinked"), "state") == "failed"
    assert "JOBlinked" in r.zrange(key(home, "dead"), 0, -1)
    assert r.llen(key(mail, "flow:outbox")) == 0


def test_under_ignore_the_pump_records_the_cross_queue_error_and_releases_the_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    widget.get_by_label("ignore the dependency").check()
    expect(outcome(widget)).to_contain_text("every child on id")
    press(widget, "Fail the cross-queue child at the cap")
    expect(outcome(widget)).to_contain_text("(policy id)")
    press(widget, "Deliver with the Pump")
    expect(outcome(widget)).to_contain_text("The Pump delivered 1")
    home, r = queue_of(site, page, "failure-policy"), site.redis()
    assert r.hgetall(key(home, "job:JOBlinked:ignored")) == {"JOBremote": "card declined"}
    assert r.hget(key(home, "job:JOBlinked"), "state") == "pending"
    # the radio stays the learner's choice across Reset
    press(widget, "Reset")
    expect(widget.get_by_label("ignore the dependency")).to_be_checked()


# -- the end of a tree, the end of the outbox ------------------------------------------


def test_a_finished_tree_says_its_root_waits_in_pending_not_walk_the_tree_first(page: Page, site: Site) -> None:
    """Issue 31: a finished tree said "walk the tree first" while the root waited in pending."""
    widget = open_widget(page, "tree")
    press(widget, "Walk the whole tree")
    q, r = queue_of(site, page, "tree"), site.redis()
    for _ in range(4):
        if r.hget(key(q, "job:JOBtree"), "state") == "pending":
            break
        press(widget, "Complete the deepest level")
    assert r.zrange(key(q, "pending"), 0, -1) == ["JOBtree"]
    press(widget, "Complete the deepest level")
    expect(outcome(widget)).to_contain_text("every level is complete")
    expect(outcome(widget)).not_to_contain_text("walk the tree first")


def test_a_finished_outbox_says_the_flow_is_done_not_complete_a_child_first(page: Page, site: Site) -> None:
    """Issue 31: a finished outbox said "Every outbox is empty: complete a child first"."""
    widget = open_widget(page, "outbox")
    q, r = queue_of(site, page, "outbox"), site.redis()
    for _ in range(6):
        if r.hget(key(q, "job:JOBparent"), "state") == "pending":
            break
        press(widget, "Complete child")
        press(widget, "Pump tick")
    assert r.hget(key(q, "job:JOBparent"), "state") == "pending"
    press(widget, "Pump tick")
    expect(outcome(widget)).not_to_contain_text(re.compile("complete a child first", re.IGNORECASE))
    press(widget, "Complete child")
    expect(outcome(widget)).to_contain_text("No child waits in pending")
    expect(outcome(widget)).not_to_contain_text(re.compile("complete a child first", re.IGNORECASE))
