"""Every branch the prose names, made to happen in Chromium on a real Valkey:
the fan-in's claim and its guards, and the failure policy's other arms. Each
test reads the page's words AND the keys back from Valkey itself."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.branch_helpers import key, open_widget, outcome, press, queue_of
from tests.e2e.conftest import Site

# -- fan-in ---------------------------------------------------------------------


def test_claim_shows_the_child_in_active_with_its_token_and_lease_and_counts_nothing(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claimed JOBchild1: it is in active with token 1")
    card = widget.locator('li[data-child="JOBchild1"]')
    expect(card).to_contain_text("token 1")
    expect(card).to_contain_text("lease until")
    expect(widget.locator('[data-role="pick-child"]')).to_have_value("JOBchild1")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("3")
    q, r = queue_of(page, "fanin"), site.redis()
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild1"]
    assert r.hget(key(q, "job:JOBchild1"), "attempts") == "1"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"


def test_a_stale_token_answers_emqstale_and_leaves_dependencies_unchanged(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    expect(widget.locator('[data-role="pick-child"]')).to_have_value("JOBchild1")
    press(widget, "Complete with a stale token")
    expect(outcome(widget)).to_contain_text("EMQSTALE complete token mismatch")
    expect(outcome(widget)).to_contain_text("no key changed")
    q, r = queue_of(page, "fanin"), site.redis()
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild1"]
    assert r.hget(key(q, "job:JOBchild1"), "state") == "active"


def test_complete_child_completes_the_claimed_child_the_learner_picks(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    expect(widget.locator('[data-role="pick-child"] option')).to_have_count(1)
    press(widget, "Claim")
    picker = widget.locator('[data-role="pick-child"]')
    expect(picker.locator("option")).to_have_count(2)
    picker.select_option("JOBchild2")
    press(widget, "Complete child")
    expect(outcome(widget)).to_contain_text("Completed JOBchild2 with token 1: :dependencies fell from 3 to 2")
    q, r = queue_of(page, "fanin"), site.redis()
    assert r.zrange(key(q, "active"), 0, -1) == ["JOBchild1"]
    assert r.hgetall(key(q, "job:JOBparent:processed")) == {"JOBchild2": "result of JOBchild2"}


def test_a_late_completion_after_the_lease_lapsed_and_a_second_claim_is_refused(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    expect(widget.locator('[data-role="pick-child"]')).to_have_value("JOBchild1")
    press(widget, "Let the lease lapse")
    expect(outcome(widget)).to_contain_text("requeue_lapsed answered [JOBchild1]")
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claimed JOBchild1: it is in active with token 2")
    press(widget, "Send the late completion")
    expect(outcome(widget)).to_contain_text("with token 1: the script answered EMQSTALE complete token mismatch")
    q, r = queue_of(page, "fanin"), site.redis()
    assert r.hget(key(q, "job:JOBchild1"), "attempts") == "2"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert not r.exists(key(q, "job:JOBparent:processed"))


def test_a_late_completion_of_a_child_not_in_active_answers_1_and_skips_the_fan_in(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    press(widget, "Claim")
    expect(widget.locator('[data-role="pick-child"]')).to_have_value("JOBchild1")
    press(widget, "Let the lease lapse")
    expect(outcome(widget)).to_contain_text("put it back in pending")
    press(widget, "Send the late completion")
    expect(outcome(widget)).to_contain_text("the script answered 1")
    expect(outcome(widget)).to_contain_text("skipped the fan-in; :dependencies 3 → 3")
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("3")
    q, r = queue_of(page, "fanin"), site.redis()
    assert not r.exists(key(q, "job:JOBchild1"))
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert not r.exists(key(q, "job:JOBparent:processed"))


def test_claim_and_complete_child_never_take_the_released_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin")
    for left in ("2", "1", "0"):
        press(widget, "Complete child")
        expect(widget.locator('[data-role="dependencies"]')).to_have_text(left)
    press(widget, "Claim")
    expect(outcome(widget)).to_contain_text("Claim takes only children, never the parent")
    q, r = queue_of(page, "fanin"), site.redis()
    assert r.zrange(key(q, "pending"), 0, -1) == ["JOBparent"]
    assert r.hget(key(q, "job:JOBparent"), "state") == "pending"
    assert r.zcard(key(q, "active")) == 0


def test_the_fan_in_step_link_opens_the_refused_late_completion(page: Page, site: Site) -> None:
    widget = open_widget(page, "fanin", "#fanin-step=7")
    expect(outcome(widget)).to_contain_text("Step 7 of 11 (Send the late completion)")
    expect(outcome(widget)).to_contain_text("EMQSTALE complete token mismatch")
    q, r = queue_of(page, "fanin"), site.redis()
    assert r.hget(key(q, "job:JOBchild2"), "attempts") == "2"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "2"


# -- failure policy -------------------------------------------------------------


def test_a_failure_with_attempts_left_schedules_the_child_and_reads_no_token(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    press(widget, "Fail child with attempts left")
    expect(outcome(widget)).to_contain_text("JOBchild1 failed on attempt 1 of 3 and is scheduled")
    expect(outcome(widget)).to_contain_text("does not read the policy token")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    q, r = queue_of(page, "failure-policy"), site.redis()
    assert r.zrange(key(q, "schedule"), 0, -1) == ["JOBchild1"]
    assert r.hget(key(q, "job:JOBparent"), "state") == "awaiting_children"
    assert r.get(key(q, "job:JOBparent:dependencies")) == "3"
    assert r.zcard(key(q, "dead")) == 0


def test_the_mixed_flow_resolves_both_flags_to_id_and_an_unknown_token_to_fp(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    press(widget, "Land a mixed flow")
    expect(widget.locator('[data-role="variant"]')).to_have_text("The mixed flow: each child its own token")
    expect(widget.get_by_label("fail the parent")).not_to_be_checked()
    q, r = queue_of(page, "failure-policy"), site.redis()
    assert [r.hget(key(q, f"job:JOBchild{i}"), "parent_policy") for i in (1, 2, 3)] == ["fp", "id", "skip"]
    press(widget, "Fail child with attempts left")
    expect(outcome(widget)).to_contain_text("is scheduled")
    press(widget, "Fail child at the cap")
    expect(outcome(widget)).to_contain_text("JOBchild2 failed")
    expect(outcome(widget)).to_contain_text("parent_policy id (ignore the dependency)")
    expect(widget.locator('[data-role="dependencies"]').first).to_have_text("2")
    press(widget, "Fail child at the cap")
    expect(outcome(widget)).to_contain_text("parent_policy skip (not a token the script knows: it resolves to fp")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("failed")
    assert r.hgetall(key(q, "job:JOBparent:ignored")) == {"JOBchild2": "card declined"}
    assert r.hget(key(q, "job:JOBparent"), "failed_child") == "JOBchild3"
    # the variant is the learner's choice: Reset lands the mixed flow again
    press(widget, "Reset")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("awaiting_children")
    assert r.hget(key(q, "job:JOBchild3"), "parent_policy") == "skip"


def test_a_cross_queue_death_travels_through_the_outbox_and_the_pump_fails_the_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    press(widget, "Fail the cross-queue child at the cap")
    expect(outcome(widget)).to_contain_text("appended a failure entry (policy fp) to mail's outbox, which now holds 1")
    expect(widget.locator('[data-role="linked-outbox"]')).to_have_text("mail's flow:outbox holds 1")
    home, mail, r = queue_of(page, "failure-policy"), queue_of(page, "failure-policy", 1), site.redis()
    assert r.llen(key(mail, "flow:outbox")) == 1
    assert r.hget(key(home, "job:JOBlinked"), "state") == "awaiting_children"
    press(widget, "Deliver with the Pump")
    expect(outcome(widget)).to_contain_text("applied fp on JOBlinked's slot")
    expect(widget.locator('[data-role="linked-state"]')).to_have_text("failed")
    assert r.hget(key(home, "job:JOBlinked"), "state") == "failed"
    assert "JOBlinked" in r.zrange(key(home, "dead"), 0, -1)
    assert r.llen(key(mail, "flow:outbox")) == 0


def test_under_ignore_the_pump_records_the_cross_queue_error_and_releases_the_parent(page: Page, site: Site) -> None:
    widget = open_widget(page, "failure-policy")
    widget.get_by_label("ignore the dependency").check()
    expect(widget.locator('[data-role="readout"]')).to_contain_text("parent_policy id")
    press(widget, "Fail the cross-queue child at the cap")
    expect(outcome(widget)).to_contain_text("(policy id)")
    press(widget, "Deliver with the Pump")
    expect(outcome(widget)).to_contain_text("applied id on JOBlinked's slot")
    expect(widget.locator('[data-role="linked-ignored"]')).to_contain_text("JOBremote → card declined")
    home, r = queue_of(page, "failure-policy"), site.redis()
    assert r.hgetall(key(home, "job:JOBlinked:ignored")) == {"JOBremote": "card declined"}
    assert r.hget(key(home, "job:JOBlinked"), "state") == "pending"
    # the radio stays the learner's choice across Reset
    press(widget, "Reset")
    expect(widget.get_by_label("ignore the dependency")).to_be_checked()
