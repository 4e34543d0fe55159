"""Predictions and progress in Chromium: every question the dives declare is
asked, answered and judged against what the test itself reads from Valkey.

A question (declared in a dive's Markdown, bound to its widget's reading) is
a `<fieldset>` whose legend starts with "Predict", one per action, several at
once; the answer rides with the action's own button; the verdict reads
"Right: Valkey holds …" or "Not quite: you said X; Valkey holds …", plus the
author's feedback for that very answer when Valkey disagreed. The test
reaches each question by the widget's deep links (the tour), reads the
widget's reading from Valkey before and after the press (the widget's own
`reading`, through a client of its own), and holds the page to it.
"""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis.asyncio as aioredis
from playwright.sync_api import Browser, BrowserContext, Locator, Page, Route, expect

from server.widgets import reader
from server.widgets.base import Value
from server.widgets.questions import Question
from server.widgets.view import Moment
from tests.e2e.conftest import Site
from tests.e2e.pages import DIVES, OWN_VER, WIDGETS, click, controls, on_dive, region, settled_after, wait_until_live
from tests.widgets import catalog

ASKING = [name for name in WIDGETS if catalog().asked(WIDGETS[name].widget)]


def moment(site: Site, name: str, sandbox: str) -> Moment:
    """The widget's keys and lab state as Valkey holds them now (read apart from the site)."""

    async def read() -> Moment:
        conn = aioredis.Redis.from_url(site.valkey.url, decode_responses=True)
        try:
            return await reader.read(conn, WIDGETS[name].widget, sandbox)
        finally:
            await conn.aclose()

    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        return pool.submit(asyncio.run, read()).result()


def fieldset(widget: Locator, question: str) -> Locator:
    return widget.locator(f'[data-role="predict"] fieldset[data-question="{question}"]')


def verdict(widget: Locator) -> Locator:
    return widget.locator('[data-role="outcome"] .verdict')


Way = tuple[int, str | None]  # a tour step (0: as it lands), then maybe one control pressed


def asked_now(page: Page, widget: Locator, name: str) -> list[str]:
    """The questions open now, as the server says, once the page shows the same ones."""
    ids = [q["id"] for q in page.request.get(f"/api/widgets/{name}/state").json()["snapshot"]["questions"]]
    expect(widget.locator('[data-role="predict"] fieldset:not([data-used])')).to_have_count(len(ids))
    shown = widget.locator('[data-role="predict"] fieldset').evaluate_all("(fs) => fs.map((f) => f.dataset.question)")
    assert shown == ids, (shown, ids)
    return ids


def declared(question: Question) -> re.Pattern[str]:
    """The legend as declared, its "{subject}" (the child it names, read from the keys) any words."""
    return re.compile("^" + re.escape(question.legend).replace(re.escape("{subject}"), ".+") + "$")


def go(page: Page, widget: Locator, name: str, way: Way) -> bool:
    """Bring the widget to `way`'s state; whether it took a press to get there."""
    step, control = way
    before = widget.get_attribute("data-ver")
    if step == 0:
        widget.locator('button[data-action="reset"]').click()
    else:
        page.evaluate(f"location.hash = ''; location.hash = '#{name}-step={step}'")
    settled_after(widget, before)
    if control is None:
        return True
    before = widget.get_attribute("data-ver")
    if not click(widget, control):
        return False
    settled_after(widget, before)
    return True


def open_at(page: Page, widget: Locator, name: str, question: Question) -> Way:
    """Bring the widget to the first state where `question` is open: as it
    lands, else the first step of its tour that opens it, else one press of a
    control after it lands (a learner's choice, such as a checkbox)."""
    tour = WIDGETS[name].widget.tour
    ways: list[Way] = [(step, None) for step in range(len(tour) + 1)]
    ways += [(0, control) for control in controls(widget) if control != 'button[data-action="reset"]']
    for way in ways:
        # the questions come in the same paint as the state
        if go(page, widget, name, way) and question.id in asked_now(page, widget, name):
            expect(fieldset(widget, question.id).locator("legend")).to_have_text(declared(question))
            return way
    raise AssertionError(f"{name}: no state a learner reaches opens the question {question.id!r}")


def back_to(page: Page, widget: Locator, name: str, way: Way, question: Question) -> None:
    """The state `way` reached again (a press is not repeated when the state kept its effect)."""
    go(page, widget, name, (way[0], None))
    if question.id not in asked_now(page, widget, name) and way[1] is not None:
        go(page, widget, name, (0, way[1]))
    assert question.id in asked_now(page, widget, name)


def answer(widget: Locator, question: Question, given: Value) -> None:
    box = fieldset(widget, question.id)
    if question.answer == "number":
        box.locator('input[type="number"]').fill(str(given))
    else:
        box.locator(f'input[type="radio"][value="{given}"]').check()
    before = widget.get_attribute("data-ver")
    widget.locator(f'button[data-action="{question.action}"]').click()
    settled_after(widget, before)
    expect(widget.locator('[data-role="outcome"]')).to_have_attribute("data-outcome-of", question.action)


def a_wrong_guess(question: Question, before: Moment, name: str) -> Value:
    """The answer an author wrote feedback for (the usual mistake), else one no state gives."""
    widget = WIDGETS[name].widget
    if question.feedback:
        note = question.feedback[0]
        base, sign, step = note.answer.partition("+") if "+" in note.answer else note.answer.partition("-")
        if base == "before":
            earlier = widget.measure(question.reading, before, before)
            return int(earlier) + (int(step or 0) if sign == "+" else -int(step or 0))  # type: ignore[arg-type]
        return note.answer
    return 999 if question.answer == "number" else question.choices[0][0]


def judged(widget: Locator, question: Question, given: Value, truth: Value) -> None:
    """The verdict on the page is what Valkey's value says of the answer, in the question's words."""
    said = question.says.format(value=question.words(truth))
    if str(given) == str(truth):
        expect(verdict(widget)).to_have_text(f"Right: Valkey holds {said}.")
        return
    text = f"Not quite: you said {question.words(given)}; Valkey holds {said}."
    expect(verdict(widget)).to_contain_text(text)
    wrote = [note.text for note in question.feedback if str(note.answer) == str(given)]
    shown = (verdict(widget).text_content() or "").removeprefix(text).strip()
    if wrote:  # the author's note for this very answer, and only that one
        assert shown == wrote[0], (question.id, shown)
    elif not any(note.answer.startswith("before") for note in question.feedback):
        assert shown == "", (question.id, shown)
    expect(widget.locator('[data-role="announce"]')).to_contain_text(text)


@pytest.mark.parametrize("name", ASKING)
def test_every_question_is_judged_by_the_value_valkey_holds_after_its_action(
    page: Page, context: BrowserContext, site: Site, name: str
) -> None:
    page.goto(WIDGETS[name].dive)
    wait_until_live(page)
    widget, sandbox = region(page, name), site.sandbox_of(context)
    page.bring_to_front()
    for question in catalog().asked(WIDGETS[name].widget):
        way = open_at(page, widget, name, question)
        # a wrong guess first (the usual mistake, when the author named one)
        before = moment(site, name, sandbox)
        guess = a_wrong_guess(question, before, name)
        answer(widget, question, guess)
        truth = WIDGETS[name].widget.measure(question.reading, moment(site, name, sandbox), before)
        judged(widget, question, guess, truth)
        # the same state again, and Valkey's own value as the answer: Right
        back_to(page, widget, name, way, question)
        answer(widget, question, truth)  # type: ignore[arg-type]
        judged(widget, question, truth, truth)


@pytest.mark.parametrize("dive", [d for d in DIVES if any(n in ASKING for n in on_dive(d))])
def test_a_first_visit_offers_each_question_its_own_choices_none_picked(page: Page, dive: str) -> None:
    """A first visit draws the widgets before their sandbox lands; the stream's first frame
    morphed the controls' policy radios (fp, id, fp checked) into the question's radios, so
    "held" was not there to pick and an answer nobody gave was picked."""
    page.goto(dive)  # a fresh context: this sandbox's first visit
    wait_until_live(page)
    for name in (n for n in on_dive(dive) if n in ASKING):
        widget = region(page, name)
        expect(widget).to_have_attribute("data-ver", OWN_VER)
        for question in catalog().asked(WIDGETS[name].widget):
            radios = fieldset(widget, question.id).locator('input[type="radio"]')
            if not radios.count():
                continue
            expect(radios).to_have_count(len(question.choices))
            shown = radios.evaluate_all("(rs) => rs.map((r) => [r.value, r.checked])")
            assert shown == [[value, False] for value, _ in question.choices], (name, question.id, shown)


def test_several_questions_are_open_at_once_one_per_action_each_answered_by_its_own_button(page: Page) -> None:
    # a widget that asks before two actions as it lands
    for name in ASKING:
        page.goto(WIDGETS[name].dive)
        wait_until_live(page)
        widget = region(page, name)
        if len(asked_now(page, widget, name)) > 1:
            break
    else:
        raise AssertionError("no widget asks two questions at once as it lands")
    boxes = widget.locator('[data-role="predict"] fieldset')
    actions = boxes.evaluate_all("(fs) => fs.map((f) => f.dataset.questionFor)")
    assert len(set(actions)) == len(actions), actions
    first, second = boxes.nth(0), boxes.nth(1)
    ids = [first.get_attribute("data-question"), second.get_attribute("data-question")]
    for box in (first, second):
        if box.locator('input[type="number"]').count():
            box.locator('input[type="number"]').fill("7")
        else:
            box.locator('input[type="radio"]').first.check()
    # one press answers its own question; the other keeps what was typed, still open
    before = widget.get_attribute("data-ver")
    widget.locator(f'button[data-action="{actions[0]}"]').click()
    settled_after(widget, before)
    expect(verdict(widget)).to_have_text(re.compile("^(Right|Not quite)"))
    assert widget.locator('[data-role="outcome"]').get_attribute("data-outcome-of") == actions[0]
    still = fieldset(widget, ids[1] or "")
    if still.count():
        typed = still.locator('input[type="number"]')
        if typed.count():
            expect(typed).to_have_value("7")


def test_any_number_is_an_answer_the_action_runs_and_valkey_judges_it(page: Page) -> None:
    """Issue 31: 1e9 or 2.5 answered 400 in developer words and the action did not run."""
    name, question = next((n, q) for n in ASKING for q in catalog().asked(WIDGETS[n].widget)
                          if q.answer == "number")
    page.goto(WIDGETS[name].dive)
    wait_until_live(page)
    widget = region(page, name)
    way = open_at(page, widget, name, question)
    for given in ("2.5", "1e9", "-3"):
        back_to(page, widget, name, way, question)
        fieldset(widget, question.id).locator('input[type="number"]').fill(given)
        before = widget.get_attribute("data-ver")
        widget.locator(f'button[data-action="{question.action}"]').click()
        settled_after(widget, before)
        expect(widget.locator('[data-role="status"]')).to_have_text("")
        expect(widget.locator('[data-role="outcome"]')).to_have_attribute("data-outcome-of", question.action)
        said = str(int(float(given))) if float(given).is_integer() else given
        expect(verdict(widget)).to_have_text(re.compile(rf"^Not quite: you said {re.escape(said)}; Valkey holds "))


LOADS = 5  # the boxes are in the server's first paint; each load also swaps in the stream's own frame


@pytest.mark.parametrize("dive", [d for d in DIVES if any(n in ASKING for n in on_dive(d))])
def test_the_predict_boxes_are_there_on_every_load(page: Page, dive: str) -> None:
    asking = [n for n in on_dive(dive) if n in ASKING]
    page.goto(dive)
    wait_until_live(page)
    # what the server asks on these keys; loading the page changes no key
    wanted = {name: len(asked_now(page, region(page, name), name)) for name in asking}
    assert sum(wanted.values()) >= 1, wanted
    loads = 0
    for _ in range(LOADS):
        page.goto(dive)
        for name, count in wanted.items():
            widget = region(page, name)
            expect(widget).to_have_attribute("data-ver", OWN_VER)
            expect(widget.locator('[data-role="predict"] fieldset legend')).to_have_count(count)
        loads += 1
    assert loads == LOADS


def test_the_predict_boxes_are_there_before_the_pages_script_runs_and_after(page: Page) -> None:
    """Issue 31 saw the box missing on 4 of 52 loads "until the state changed": a question
    module ran after the first snapshot was painted. The boxes are now the server's HTML: there
    with lab.js refused, and still there once it has swapped the stream's frames in."""
    dive = next(d for d in DIVES if any(n in ASKING for n in on_dive(d)))
    asking = [n for n in on_dive(dive) if n in ASKING]
    refused: list[str] = []

    def refuse(route: Route) -> None:
        refused.append(route.request.url)
        route.abort()

    page.route("**/static/widgets/lab.js", refuse)
    page.goto(dive)
    for name in asking:
        expect(region(page, name).locator('[data-role="predict"] fieldset legend').first).to_have_text(
            re.compile("^Predict"))
    assert refused, "the page never asked for lab.js"
    page.unroute("**/static/widgets/lab.js")
    page.goto(dive)
    wait_until_live(page)
    for name in asking:
        expect(region(page, name).locator('[data-role="predict"] fieldset legend').first).to_have_text(
            re.compile("^Predict"))


# -- progress ---------------------------------------------------------------------

def progress_badge(widget: Locator) -> Locator:
    return widget.locator('[data-role="widget-progress"]')


def test_progress_is_the_checklist_kept_in_valkey_on_every_page_across_reload_and_reset(
    context: BrowserContext,
) -> None:
    name = ASKING[0]
    tour = WIDGETS[name].widget.tour
    first, second = context.new_page(), context.new_page()
    for page in (first, second):
        page.goto(WIDGETS[name].dive)
        wait_until_live(page)
    a, b = region(first, name), region(second, name)
    expect(progress_badge(a)).to_have_text(f"0 of {len(tour)} steps reached.")
    # the tour's first step, reached by its own presses
    first.bring_to_front()
    for slug, _ in tour[0].replay:
        before = a.get_attribute("data-ver")
        a.locator(f'button[data-action="{slug}"]').click()
        settled_after(a, before)
    said = f"1 of {len(tour)} steps reached."
    expect(progress_badge(a)).to_have_text(said)
    expect(a.locator(f'[data-role="checklist"] li[data-step="{tour[0].id}"]')).to_have_class(re.compile("reached"))
    # the other page of the sandbox shows the same, from the stream (issue 31: it kept "0 of …")
    expect(progress_badge(b)).to_have_text(said)
    expect(b.locator(f'[data-role="checklist"] li[data-step="{tour[0].id}"]')).to_have_class(re.compile("reached"))
    # kept across a Reset and a reload
    a.locator('button[data-action="reset"]').click()
    expect(a.locator('[data-role="outcome"]')).to_have_attribute("data-outcome-of", "reset")
    first.reload()
    expect(progress_badge(region(first, name))).to_have_text(said)


def test_a_stranger_starts_with_no_progress(context: BrowserContext, browser: Browser, site: Site) -> None:
    name = ASKING[0]
    mine = context.new_page()
    mine.goto(WIDGETS[name].dive)
    wait_until_live(mine)
    widget = region(mine, name)
    widget.locator("button[data-action].primary").click()
    expect(progress_badge(widget)).not_to_have_text(re.compile("^0 of"))
    other = browser.new_context(base_url=site.url)
    try:
        stranger = other.new_page()
        stranger.goto(WIDGETS[name].dive)
        wait_until_live(stranger)
        expect(progress_badge(region(stranger, name))).to_have_text(re.compile("^0 of "))
        expect(stranger.locator('[data-role="dive-progress-summary"]')).to_contain_text(re.compile(r"^0 of \d+ widget"))
    finally:
        other.close()


def test_the_progress_page_lists_every_dive_and_start_over_asks_first_then_says_what_it_did(page: Page) -> None:
    name = ASKING[0]
    tour = WIDGETS[name].widget.tour
    page.goto(WIDGETS[name].dive)
    wait_until_live(page)
    widget = region(page, name)
    for slug, _ in tour[0].replay:
        before = widget.get_attribute("data-ver")
        widget.locator(f'button[data-action="{slug}"]').click()
        settled_after(widget, before)
    page.goto("/progress")
    expect(page.get_by_role("heading", name="Your progress", level=1)).to_be_visible()
    row = page.locator(f'tr[data-progress-of="{name}"]')
    expect(row).to_contain_text(f"1 of {len(tour)} steps")
    for dive in DIVES:
        expect(page.locator(f'section[data-dive="{dive}"]')).to_have_count(1)
    page.get_by_role("button", name="Start over…").click()
    # asked first: nothing is forgotten yet
    expect(page.get_by_role("alert")).to_contain_text("cannot be undone")
    expect(row).to_contain_text(f"1 of {len(tour)} steps")
    page.get_by_role("button", name="Yes, start over").click()
    expect(page.locator('[data-role="started-over"]')).to_contain_text("your record is forgotten")
    expect(page.locator(f'tr[data-progress-of="{name}"]')).to_contain_text(f"0 of {len(tour)} steps")
    page.goto("/")
    expect(page.locator('[data-role="dive-progress-summary"]').first).to_contain_text(re.compile(r"0 of \d+ widget"))
