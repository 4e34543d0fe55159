"""An exercise as a learner meets it: write the fan-in in a code editor, run,
read the failures, fix, pass; come back to it later; never read a verdict
the last run did not give."""

from __future__ import annotations

import re

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.conftest import Site

DIVE = "/flows/parent-and-children"
TITLE = "Exercise: Count the children down"
YOUR_PART = "  -- YOUR PART: the fan-in of a same-queue child."
CHECKS = 8

# a first try that forgets the guard: it counts every call, the redelivered one too
CARELESS = """  redis.call('HSET', KEYS[4], job_id, ARGV[5])
  local left = redis.call('DECR', KEYS[3])
  if left == 0 then
    redis.call('ZADD', base .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
  end
"""
# counts once, but releases at zero without looking at the parent
UNCHECKED = """  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
    if redis.call('DECR', KEYS[3]) <= 0 then
      redis.call('ZADD', base .. 'pending', 0, ARGV[4])
      redis.call('HSET', KEYS[5], 'state', 'pending')
    end
  end
"""
CAREFUL = """  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
    local left = redis.call('DECR', KEYS[3])
    if left <= 0 and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
      redis.call('ZADD', base .. 'pending', 0, ARGV[4])
      redis.call('HSET', KEYS[5], 'state', 'pending')
    end
  end
"""


def exercise(page: Page) -> Locator:
    return page.get_by_role("region", name=TITLE)


def field(region: Locator) -> Locator:
    """The form's own field: hidden under the editor, kept in step with it."""
    return region.locator('textarea[name="script"]')


def with_part(starter: str, part: str) -> str:
    return starter.replace(YOUR_PART, YOUR_PART + "\n" + part)


def write(region: Locator, script: str) -> None:
    """Type into the editor as a learner's paste would land: the editor labelled "Your script"."""
    region.get_by_label("Your script").fill(script)
    expect(field(region)).to_have_value(script)


def run(region: Locator) -> None:
    region.get_by_role("button", name="Run the checks").click()


def status(region: Locator) -> Locator:
    return region.locator('[data-role="status"]')


def results(region: Locator) -> Locator:
    return region.locator('[data-role="results"] > li')


def opened(page: Page) -> Locator:
    page.goto(DIVE)
    region = exercise(page)
    region.scroll_into_view_if_needed()  # the editor loads as the exercise nears the screen
    expect(region.locator(".cm-editor")).to_be_visible()
    return region


def test_a_learner_writes_the_fan_in_fails_a_check_fixes_it_and_passes_them_all(page: Page) -> None:
    region = opened(page)
    starter = field(region).input_value()
    assert YOUR_PART in starter
    # the starter as it is: the checks that need the learner's part fail
    run(region)
    expect(status(region)).to_have_text(re.compile(rf"^\d of {CHECKS} checks passed\.$"))
    expect(results(region).filter(has_text="three children: failed")).to_have_count(1)
    # a first try without the guard: a late completion is counted again
    write(region, with_part(starter, CARELESS))
    run(region)
    failed = results(region).filter(has_text="a completion after the lease lapsed: failed")
    expect(failed).to_have_count(1)
    failed.locator("summary").click()
    # the keys before and after, named as the course names them, each value under "value"
    after = failed.locator("table.keys").nth(1)
    name = re.compile(r"^emq:\{q\}:job:JOBreport:dependencies$")
    deps = after.locator("tr", has=page.locator("td.key-name", has_text=name))
    expect(deps.locator("td.key-value")).to_have_text("0")
    expect(failed).not_to_contain_text("{r")
    # a fan-in that releases without looking at the parent: the two checks that say why
    write(region, with_part(starter, UNCHECKED))
    run(region)
    expect(results(region).filter(has_text="a parent already failed: failed")).to_contain_text(
        "only a parent still held (awaiting_children) is released")
    expect(results(region).filter(has_text="a parent already released: failed")).to_have_count(1)
    # fixed: every check passes, and the learner's record says so
    write(region, with_part(starter, CAREFUL))
    run(region)
    expect(status(region)).to_have_text(f"{CHECKS} of {CHECKS} checks passed.")
    expect(results(region).filter(has_text=": passed")).to_have_count(CHECKS)
    best = f"best run: {CHECKS} of {CHECKS} checks passed"
    expect(region.locator('[data-role="best"]')).to_contain_text(f"Your {best}.")
    page.goto("/progress")
    expect(page.locator('[data-progress-of="ex:fan-in"]')).to_contain_text(best)


def test_a_run_that_did_not_happen_leaves_no_verdict_of_the_run_before(page: Page, browser: Browser,
                                                                      site: Site) -> None:
    region = opened(page)
    starter = field(region).input_value()
    write(region, with_part(starter, CAREFUL))
    run(region)
    expect(results(region).filter(has_text=": passed")).to_have_count(CHECKS)
    # a syntax error: the compile error (its line said once), and every check "not run"
    broken = with_part(starter, "  local x = = 1")
    write(region, broken)
    run(region)
    expect(status(region)).to_have_text(re.compile(r"\(line \d+\)$"))
    said = status(region).inner_text()
    assert said.count("(line") == 1, said
    not_run = "not run — the script does not compile"
    expect(results(region).filter(has_text=not_run)).to_have_count(CHECKS)
    expect(results(region).filter(has_text="passed")).to_have_count(0)
    lines = results(region).all_inner_texts()
    # without JavaScript the form's page says the same, line for line
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        still = context.new_page()
        still.goto(DIVE)
        exercise(still).get_by_label("Your script").fill(broken)
        exercise(still).get_by_role("button", name="Run the checks").click()
        expect(still.locator(".widget-status")).to_have_text(said)
        expect(still.locator(".exercise-results > li")).to_have_text(lines)
    finally:
        context.close()
    # a refusal (over 16,384 bytes): the same
    write(region, ("-- " + "x" * 77 + "\n") * 210)
    run(region)
    expect(results(region).filter(has_text="not run — the script is too large")).to_have_count(CHECKS)
    expect(results(region).filter(has_text=re.compile(": (passed|failed) —"))).to_have_count(0)


def test_the_editors_modules_load_only_when_the_exercise_nears_the_screen(page: Page) -> None:
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(DIVE)
    region = exercise(page)
    expect(region.locator('[data-role="best"]')).to_contain_text("Not run yet")  # its script is live
    assert not [url for url in fetched if "/@codemirror/" in url], "the editor loaded with the page"
    expect(region.locator(".cm-editor")).to_have_count(0)
    region.scroll_into_view_if_needed()
    expect(region.locator(".cm-editor")).to_be_visible()
    assert [url for url in fetched if "/@codemirror/view/" in url]


def test_a_reload_opens_the_learners_last_script_and_shows_their_best_run(page: Page) -> None:
    region = opened(page)
    starter = field(region).input_value()
    write(region, with_part(starter, CAREFUL))
    run(region)
    expect(status(region)).to_have_text(f"{CHECKS} of {CHECKS} checks passed.")
    mine = with_part(starter, CARELESS)
    write(region, mine)
    run(region)
    expect(status(region)).not_to_have_text(f"{CHECKS} of {CHECKS} checks passed.")
    expect(status(region)).to_have_text(re.compile(r"checks passed\.$"))
    # the best run never falls, and the line a run swapped in is the one the server draws at first paint
    best = region.locator('[data-role="best"]')
    expect(best).to_contain_text(f"Your best run: {CHECKS} of {CHECKS} checks passed.")
    after_run = best.inner_text()
    page.reload()
    region = exercise(page)
    expect(region.locator('[data-role="best"]')).to_have_text(after_run)
    region.scroll_into_view_if_needed()
    expect(field(region)).to_have_value(mine)  # the last script, not the best
    # the editor draws the lines in its view: its end, where the learner's part is
    region.locator(".cm-scroller").evaluate("scroller => { scroller.scrollTop = scroller.scrollHeight; }")
    expect(region.locator(".cm-content")).to_contain_text("local left = redis.call('DECR', KEYS[3])")
    expect(region.locator('[data-role="best"]')).to_contain_text(f"Your best run: {CHECKS} of {CHECKS} checks")
    # "Start over" asks first, then forgets both
    page.goto("/progress")
    page.get_by_role("button", name="Start over…").click()
    page.get_by_role("button", name="Yes, start over").click()
    page.goto(DIVE)
    region = exercise(page)
    expect(region.locator('[data-role="best"]')).to_contain_text("Not run yet")
    expect(field(region)).to_have_value(starter)


def test_the_editor_fills_the_widget_and_highlights_lua_at_desktop_and_phone_width(
        browser: Browser, site: Site) -> None:
    for width in (1280, 390):
        context = browser.new_context(base_url=site.url, viewport={"width": width, "height": 900})
        try:
            page = context.new_page()
            region = opened(page)
            form = region.locator('[data-role="form"]').bounding_box()
            box = region.locator(".cm-editor").bounding_box()
            assert form is not None and box is not None
            assert abs(box["width"] - form["width"]) <= 2, (width, box, form)
            assert box["width"] >= (300 if width == 390 else 380), (width, box)
            assert region.locator(".cm-lineNumbers .cm-gutterElement").count() > 5  # line numbers
            # Lua highlighted: `local` is a keyword token, not plain text
            keyword = region.locator(".cm-line span", has_text=re.compile(r"^local$")).first
            assert keyword.evaluate("e => getComputedStyle(e).color") != region.locator(".cm-content").evaluate(
                "e => getComputedStyle(e).color")
            # no line of the widget wider than the page
            assert page.evaluate("document.documentElement.scrollWidth") <= width
        finally:
            context.close()


IN_EDITOR = "document.activeElement.shadowRoot?.activeElement?.classList.contains('cm-content') === true"


def violations(page: Page) -> list[object]:
    found: list[object] = Axe().run(page).response["violations"]
    return found


def test_tab_indents_and_escape_then_tab_leaves_the_editor(page: Page) -> None:
    region = opened(page)
    editor = region.get_by_label("Your script")
    editor.click()
    page.keyboard.press("Control+Home")
    before = field(region).input_value()
    page.keyboard.press("Tab")
    expect(field(region)).not_to_have_value(before)  # Tab indented the line, focus stayed
    assert field(region).input_value().startswith("  ")
    assert page.evaluate(IN_EDITOR)
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    expect(region.get_by_role("button", name="Run the checks")).to_be_focused()
    page.keyboard.press("Shift+Tab")  # and back in
    assert page.evaluate(IN_EDITOR)


def test_brackets_match_under_the_cursor(page: Page) -> None:
    region = opened(page)
    write(region, "local t = { (1 + 2) }\nreturn t")
    region.get_by_label("Your script").click()
    page.keyboard.press("Control+Home")
    for _ in range(len("local t = ")):
        page.keyboard.press("ArrowRight")
    expect(region.locator(".cm-matchingBracket")).to_have_count(2)


def test_axe_finds_no_violation_with_the_editor_and_a_failing_check_opened(page: Page) -> None:
    region = opened(page)
    run(region)
    expect(status(region)).to_have_text(re.compile(r"checks passed\.$"))
    region.locator("details.exercise-picture summary").first.click()
    found = violations(page)
    assert found == [], [(v["id"], [n["target"] for n in v["nodes"]]) for v in found]  # type: ignore[index]
    page.goto("/flows/cross-queue")
    delivery = page.get_by_role("region", name="Exercise: Deliver a completion once")
    delivery.scroll_into_view_if_needed()
    expect(delivery.locator(".cm-editor")).to_be_visible()
    assert violations(page) == []


def test_without_javascript_the_exercise_is_a_form_that_posts_and_shows_the_results(
        browser: Browser, site: Site) -> None:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(DIVE)
        region = exercise(page)
        expect(region.get_by_label("Your script")).to_be_visible()  # the plain textarea
        region.get_by_role("button", name="Run the checks").click()
        expect(page.locator("h1")).to_have_text(TITLE)
        expect(page.locator(".exercise-summary")).to_have_text(re.compile(rf"^\d of {CHECKS} checks passed\.$"))
        expect(page.locator(".exercise-results li").filter(has_text="failed").first).to_be_visible()
        # the kept work, on the exercise's own page
        page.goto(DIVE)
        exercise(page).get_by_role("link", name="open them on a page of their own").click()
        expect(page.locator(".exercise-best")).to_contain_text(re.compile(rf"Your best run: \d of {CHECKS} checks"))
    finally:
        context.close()
