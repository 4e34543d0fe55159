"""Deep links: `#step=N` opens a page's first widget at step N of its tour,
`#<widget>-step=N` any other, rebuilt on the learner's own sandbox by
replaying the real moves on Valkey. The tests read Valkey directly."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import region


def sandbox_of(widget: Locator) -> str:
    """The sandbox id, from the key panel's caption "queue <sandbox>.<widget> · …"."""
    caption = widget.locator("table.keys caption").first
    expect(caption).to_have_text(re.compile(r"^queue s[a-z0-9]{10}\."))
    return (caption.text_content() or "").split()[1].split(".")[0]


def keys_of(site: Site, queue: str) -> set[str]:
    prefix = f"emq:{{{queue}}}:"
    return {k.removeprefix(prefix) for k in site.redis().scan_iter(match=prefix + "*")}


def test_step_3_opens_the_stepper_at_move_3_with_exactly_its_keys_in_valkey(page: Page, site: Site) -> None:
    page.goto("/flows/parent-and-children#step=3")
    widget = region(page, "enqueue-stepper")
    # one numbering: up to the last move, a tour step is a move, and the outcome says "move"
    expect(widget.locator('[data-role="outcome"]')).to_have_text(
        re.compile(r"^Rebuilt on Valkey from the link\. Move 3 of 4, hold the parent")
    )
    expect(widget.locator('[data-role="outcome"]')).not_to_contain_text("Step")
    expect(widget.locator('[data-role="readout"]')).to_contain_text("After move 3 of 4 (hold the parent)")
    sandbox = sandbox_of(widget)
    queue = f"{sandbox}.stepper"
    # move 3: the children landed (rows and pending), the parent held; no counter yet
    assert keys_of(site, queue) == {"job:JOBchild1", "job:JOBchild2", "pending", "job:JOBparent"}
    r = site.redis()
    assert r.hget(f"emq:{{{queue}}}:job:JOBparent", "state") == "awaiting_children"
    assert r.zrange(f"emq:{{{queue}}}:pending", 0, -1) == ["JOBchild1", "JOBchild2"]
    # the page shows the move it was opened at
    expect(widget.locator(".moves li.current")).to_contain_text("Move 3")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("awaiting_children")


def test_a_plain_step_link_leaves_the_other_widgets_of_the_page_alone(page: Page, site: Site) -> None:
    page.goto("/flows/parent-and-children#step=4")
    stepper, fanin = region(page, "enqueue-stepper"), region(page, "fanin")
    expect(stepper.locator('[data-role="outcome"]')).to_contain_text("Move 4 of 4")
    expect(fanin.locator('[data-role="dependencies"]')).to_have_text("3")
    expect(fanin.locator('[data-role="outcome"]')).to_be_hidden()
    sandbox = sandbox_of(stepper)
    assert site.redis().get(f"emq:{{{sandbox}.stepper}}:job:JOBparent:dependencies") == "2"


def test_a_widget_step_link_replays_the_failure_policy_tour_on_valkey(page: Page, site: Site) -> None:
    page.goto("/flows/cross-queue#failure-policy-step=1")
    widget = region(page, "failure-policy")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text("Step 1 of 9 (Fail child at the cap)")
    expect(widget.locator('[data-role="parent-state"]')).to_have_text("failed")
    queue = f"{sandbox_of(widget)}.failure-policy"
    r = site.redis()
    assert r.hget(f"emq:{{{queue}}}:job:JOBparent", "state") == "failed"
    assert r.zrange(f"emq:{{{queue}}}:dead", 0, -1) == ["JOBchild1", "JOBparent"] or set(
        r.zrange(f"emq:{{{queue}}}:dead", 0, -1)) == {"JOBchild1", "JOBparent"}
    # the page's first widget (the outbox) was not replayed
    expect(region(page, "outbox").locator('[data-role="dependencies"]')).to_have_text("3")


def test_changing_the_hash_on_an_open_page_replays_that_widget(page: Page, site: Site) -> None:
    page.goto("/flows/parent-and-children")
    fanin = region(page, "fanin")
    expect(fanin.locator('[data-role="dependencies"]')).to_have_text("3")
    page.evaluate("location.hash = '#fanin-step=9'")
    expect(fanin.locator('[data-role="dependencies"]')).to_have_text("1")
    queue = f"{sandbox_of(fanin)}.fanin"
    r = site.redis()
    assert r.hget(f"emq:{{{queue}}}:job:JOBparent", "state") == "awaiting_children"
    assert r.hgetall(f"emq:{{{queue}}}:job:JOBparent:processed").keys() == {"JOBchild1", "JOBchild2"}


def test_a_step_past_the_tour_says_how_many_steps_it_has_and_opens_the_last(page: Page, site: Site) -> None:
    page.goto("/flows/reading-the-results#step=99")
    widget = region(page, "results")
    expect(widget.locator('[data-role="outcome"]')).to_contain_text(
        "The tour has 5 steps; here is the last. Step 5 of 5"
    )
    expect(widget.locator('[data-role="status"]')).to_have_text("")


def test_a_stepper_link_past_its_tour_opens_the_last_step_without_mixing_steps_and_moves(page: Page) -> None:
    page.goto("/flows/parent-and-children#step=7")
    widget = region(page, "enqueue-stepper")
    outcome = widget.locator('[data-role="outcome"]')
    expect(outcome).to_contain_text("This tour has 6 steps, so the link to step 7 opened the last one.")
    # the tour's last step runs the non-JOB flow as one call: the kind law refuses it,
    # and the sentence names the button and the script's move, never a tour step number
    expect(outcome).to_contain_text("Rebuilt on Valkey from the link, up to “Run atomically”.")
    expect(outcome).to_contain_text("The script refused in move 1 (gate every id) with EMQKIND")
    expect(outcome).not_to_contain_text("Step ")


def test_a_widget_step_link_scrolls_to_the_widget_and_focuses_it(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/flows/parent-and-children#fanin-step=2")
    fanin = region(page, "fanin")
    # step 2 of the tour: one completion, then its redelivery
    expect(fanin.locator('[data-role="dependencies"]')).to_have_text("2")
    expect(fanin).to_be_focused()
    expect(fanin).to_be_in_viewport()
