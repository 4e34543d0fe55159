"""The learning loop as a learner and an instructor meet it in Chromium (issue 41,
items 5-9 and 14): a press that did nothing is not judged; the page's progress
line follows every page of the sandbox; a prediction's field comes before its
button and Enter in it presses that button; the policy question names its
child; an asked question in own sandboxes keeps each verdict until Reveal; the
effects log names the script's own command; a deep link that names no step is
said; the raw keys' title says what it leaves out."""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, on_dive, region, settled_after, wait_until_live
from tests.e2e.rooms import (
    DIVE,
    FANIN_QUESTION,
    LEGEND,
    answer_and_complete,
    counter,
    fanin,
    fanin_reset,
    join_room,
    open_room,
    question,
    signed_in_instructor,
)

POLICY_DIVE = WIDGETS["failure-policy"].dive


def summary(page: Page) -> Locator:
    """The page's own progress line (outside the widgets)."""
    return page.locator('[data-role="dive-progress"] [data-role="dive-progress-summary"]')


def outcome(widget: Locator) -> Locator:
    return widget.locator('[data-role="outcome"]')


def press_api(context: BrowserContext, site: Site, widget: str, *actions: str) -> None:
    """Presses as another page of the same sandbox would send them."""
    for action in actions:
        answer = context.request.post(f"{site.url}/api/widgets/{widget}/{action}", data={},
                                      headers={"Origin": site.url})
        assert answer.ok, (action, answer.status, answer.text())


# -- item 5: a press that did nothing is not judged -----------------------------------------


def test_an_answer_sent_from_a_stale_page_with_a_press_that_did_nothing_is_not_judged_nor_counted(
        context: BrowserContext, site: Site) -> None:
    # one child left to complete: a late completion retired JOBchild1 uncounted, JOBchild2 completed
    setup = context.new_page()
    setup.goto(DIVE)
    press_api(context, site, "fanin", "reset", "claim", "lapse", "late", "complete-child")
    stale = context.new_page()
    # the stale page hears nothing live: it keeps showing the question its first paint drew
    stale.route("**/api/stream*", lambda route: route.abort())
    stale.goto(DIVE)
    box = question(stale)
    expect(box).to_be_visible()
    # another page of the sandbox completes the last child: nothing is left to complete
    fanin(setup).get_by_role("button", name="Complete child", exact=True).click()
    expect(counter(setup)).to_have_text("1")
    expect(fanin(setup).locator(f'fieldset[data-question="{FANIN_QUESTION["id"]}"]')).to_have_count(0)
    box.locator('input[type="number"]').fill("0")
    with stale.expect_response(re.compile("/api/widgets/fanin/complete-child$")) as sent:
        fanin(stale).get_by_role("button", name="Complete child", exact=True).click()
    assert sent.value.json()["verdict"] is None
    stale.unroute("**/api/stream*")  # the page catches up: the outcome comes by the stream
    for page in (stale, setup):
        expect(outcome(fanin(page))).to_contain_text("Your prediction was not judged: this press changed nothing.")
        expect(outcome(fanin(page)).locator(".verdict")).to_have_count(0)
        expect(summary(page)).not_to_contain_text("prediction")  # nothing asked, nothing counted


# -- item 6: the progress line follows every page of the sandbox ------------------------------


def test_a_judged_prediction_moves_the_progress_line_on_both_pages_of_the_sandbox(context: BrowserContext) -> None:
    one, two = context.new_page(), context.new_page()
    for page in (one, two):
        page.goto(DIVE)
        wait_until_live(page)
    fanin(one).locator('button[data-action="reset"]').click()
    expect(counter(two)).to_have_text("3")
    for page in (one, two):
        expect(summary(page)).not_to_contain_text("prediction")
    two.evaluate("window.notReloaded = true")
    answer_and_complete(one, 2)
    for page in (one, two):
        expect(summary(page)).to_contain_text("1 of 1 prediction right")
    answer_and_complete(two, 5)  # wrong, from the other page
    for page in (one, two):
        expect(summary(page)).to_contain_text("1 of 2 predictions right")
    assert two.evaluate("window.notReloaded === true")  # moved live, not by a reload


# -- item 7: the field before its button; Enter presses it ------------------------------------


def test_the_prediction_field_comes_before_its_button_in_tab_order_and_enter_in_it_presses_the_action(
        page: Page) -> None:
    widget = fanin_reset(page)
    field = question(page).locator('input[type="number"]')
    button = widget.get_by_role("button", name="Complete child", exact=True)
    field.focus()
    for _ in range(20):  # Tab forward from the field reaches its button
        page.keyboard.press("Tab")
        if button.evaluate("(node) => node === document.activeElement"):
            break
    else:
        raise AssertionError("Tab from the prediction's field never reached its button")
    field.fill("2")
    before = widget.get_attribute("data-ver")
    field.press("Enter")
    settled_after(widget, before)
    expect(outcome(widget)).to_have_attribute("data-outcome-of", "complete-child")
    expect(outcome(widget).locator(".verdict")).to_contain_text(re.compile(r"^Right"))
    expect(counter(page)).to_have_text("2")


# -- item 8: the policy question names its child (Enter on a radio presses too) ----------------


def test_the_policy_question_names_the_child_the_press_fails_and_the_outcome_is_about_that_child(
        page: Page) -> None:
    page.goto(POLICY_DIVE)
    wait_until_live(page)
    widget = region(page, "failure-policy")
    for action in ("reset", "mixed"):
        before = widget.get_attribute("data-ver")
        widget.locator(f'button[data-action="{action}"]').click()
        settled_after(widget, before)
    legend = "Predict: what happens to the parent when JOBchild1 (parent_policy fp) dies at its cap?"
    box = widget.get_by_role("group", name=legend)
    expect(box.locator("legend")).to_have_text(legend)
    box.locator('input[type="radio"][value="failed"]').check()
    before = widget.get_attribute("data-ver")
    box.locator('input[type="radio"][value="failed"]').press("Enter")
    settled_after(widget, before)
    expect(outcome(widget)).to_have_attribute("data-outcome-of", "fail-child")
    expect(outcome(widget).locator(".verdict")).to_contain_text(re.compile(r"^Right"))
    expect(outcome(widget).locator(".outcome-text")).to_contain_text("JOBchild1")


# -- item 9: own sandboxes, an asked question keeps each verdict until Reveal -------------------


def learner_on_dive(contexts: Callable[..., BrowserContext], code: str, name: str) -> Page:
    page = join_room(contexts(), code, name)
    page.goto(DIVE)
    expect(counter(page)).to_have_text("3")
    return page


def test_an_asked_question_in_own_sandboxes_hides_each_learners_verdict_until_reveal(
        contexts: Callable[..., BrowserContext]) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Veiled e2e")
    ada, grace = (learner_on_dive(contexts, code, name) for name in ("Ada", "Grace"))
    picks = class_page.get_by_role("group", name="Question and step")
    picks.get_by_role("radio", name=re.compile(r"^fanin · step 0 .*" + re.escape(LEGEND))).check()
    class_page.get_by_role("button", name="Ask the class").click()
    mine = {page: page.get_by_role("region", name="Your class's question").locator('[data-role="class-ask-mine"]')
            for page in (ada, grace)}
    for page, value in ((ada, 3), (grace, 2)):
        expect(question(page).locator("legend")).to_have_text(LEGEND)
        answer_and_complete(page, value)
        said = fanin(page).locator('[data-role="outcome"] .verdict')
        expect(said).to_have_text(f"Your answer {value} is in; its verdict shows when your instructor "
                                  "reveals the class's answers.")
        expect(mine[page]).to_contain_text("Your answer")
        expect(mine[page]).not_to_contain_text(re.compile("Right|Not quite"))
        expect(summary(page)).not_to_contain_text("prediction")  # progress does not tell either
    class_page.get_by_role("button", name="Reveal").click()
    expect(mine[ada]).to_contain_text("Not quite: you said 3")
    expect(mine[grace]).to_contain_text("Right")


# -- item 14: the effects log, a bad step link, the raw keys' title -----------------------------


def test_the_effects_log_names_the_scripts_decr_where_valkey_notifies_incrby(page: Page) -> None:
    widget = fanin_reset(page)
    widget.get_by_role("button", name="Complete child", exact=True).click()
    expect(counter(page)).to_have_text("2")
    widget.locator("details.effects-box > summary").click()
    row = widget.locator(".effect", has=page.locator(".effect-key", has_text=":dependencies"))
    expect(row.locator(".effect-verb")).to_have_text("decr")
    expect(row.locator(".effect-verb")).to_have_attribute("title", "Valkey's notification names it incrby")
    expect(widget.locator(".effect-verb", has_text=re.compile(r"^incrby$"))).to_have_count(0)


def test_a_step_link_that_names_no_step_is_said_in_the_widgets_status_and_changes_nothing(page: Page) -> None:
    first = on_dive(DIVE)[0]
    total = len(WIDGETS[first].widget.tour)
    page.goto(DIVE)
    wait_until_live(page)
    widget = region(page, first)
    ver = widget.get_attribute("data-ver")
    page.evaluate("location.hash = '#step=abc'")
    expect(widget.locator('[data-role="status"]')).to_contain_text(
        f"#step=abc is not a step of this tour (1–{total}); the widget stays as it is.")
    page.evaluate(f"location.hash = '#{first}-step=2x'")
    expect(widget.locator('[data-role="status"]')).to_contain_text(f"#{first}-step=2x is not a step of this tour")
    expect(widget).to_have_attribute("data-ver", ver or "")  # nothing was replayed


# The stream's status frames reach the page 1.5 s late (as on a slow network): what they say is
# the server's, only when it arrives changes; `__statuses` counts those handed on.
LATE_STATUS = """
window.__statuses = 0;
const add = EventSource.prototype.addEventListener;
EventSource.prototype.addEventListener = function (type, listener, options) {
  if (type !== "status") return add.call(this, type, listener, options);
  return add.call(this, type, (event) => setTimeout(() => { listener.call(this, event); window.__statuses++; }, 1500),
                  options);
};
"""


def test_a_refused_step_link_stays_said_when_the_streams_first_status_comes_after_it(page: Page) -> None:
    first = on_dive(DIVE)[0]
    page.add_init_script(LATE_STATUS)
    page.goto(f"{DIVE}#step=abc")
    status = region(page, first).locator('[data-role="status"]')
    expect(status).to_contain_text("#step=abc is not a step of this tour")
    for _ in range(100):  # "Valkey up, nothing to say" arrives after the refusal: not a word on it
        if page.evaluate("window.__statuses") >= 1:
            break
        page.wait_for_timeout(100)
    assert page.evaluate("window.__statuses") >= 1
    expect(status).to_contain_text("#step=abc is not a step of this tour")


def test_starting_over_is_told_in_every_widget_of_an_open_dive_until_dismissed(context: BrowserContext) -> None:
    dive = context.new_page()
    dive.goto(DIVE)
    wait_until_live(dive)
    progress = context.new_page()  # the same sandbox, on another page
    progress.goto("/progress")
    progress.get_by_role("button", name="Start over…").click()
    progress.get_by_role("button", name="Yes, start over").click()
    expect(progress.locator('[data-role="started-over"]')).to_contain_text("your record is forgotten")
    said = "You started over: every scenario lands again."
    widgets = [region(dive, name) for name in on_dive(DIVE)[:2]]
    for widget in widgets:
        expect(widget.locator('[data-role="status"]')).to_have_text(f"{said} Dismiss")
        expect(widget.locator('[data-role="announce"]')).to_contain_text(said)
    widgets[0].get_by_role("button", name="Dismiss this notice").click()
    expect(widgets[0].locator('[data-role="status"]')).to_have_text("")
    expect(widgets[1].locator('[data-role="status"]')).to_have_text(f"{said} Dismiss")  # each its own


def test_the_raw_keys_title_says_the_sandbox_id_is_left_out_and_no_value_shows_it(
        context: BrowserContext, site: Site) -> None:
    page = context.new_page()
    page.goto(DIVE)
    wait_until_live(page)
    widget = fanin(page)
    summary_line = widget.locator("details.raw-keys > summary")
    expect(summary_line).to_contain_text("Raw keys as Valkey holds them, your sandbox's id left out of names "
                                         "and values")
    summary_line.click()
    expect(widget.locator('[data-role="keys"] tr[data-key]').first).to_be_visible()
    assert site.sandbox_of(context) not in widget.locator('[data-role="keys"]').inner_text()



def test_a_parent_row_gone_with_one_child_left_says_one_child_still_waits(page: Page) -> None:
    widget = fanin_reset(page)
    for left in ("2", "1"):
        widget.get_by_role("button", name="Complete child", exact=True).click()
        expect(counter(page)).to_have_text(left)
    command = page.get_by_label("Command", exact=True)
    command.fill("DEL emq:{fanin}:job:JOBparent")
    command.press("Enter")
    readout = widget.locator('[data-role="readout"]')
    expect(readout).to_contain_text("The parent's row is gone, yet 1 child still waits")


def test_a_long_error_from_the_learners_script_is_cut_at_a_word_and_its_length_said(page: Page) -> None:
    page.goto(DIVE)
    region_ = page.get_by_role("region", name="Exercise: Count the children down")
    region_.scroll_into_view_if_needed()
    words = " ".join(f"w{i:02d}x" for i in range(90))  # 449 characters; no word is a piece of another
    region_.get_by_label("Your script").fill(f"error('{words}', 0)")
    region_.get_by_role("button", name="Run the checks").click()
    first = region_.locator('[data-role="results"] > li').first
    expect(first).to_contain_text("the script stopped with the error:")
    said = first.inner_text()
    shown = re.search(r"the error: (.*?)… \(([\d,]+) characters\)", said)
    assert shown, said
    assert shown[1].split()[-1] in words.split()  # the last word shown is whole
