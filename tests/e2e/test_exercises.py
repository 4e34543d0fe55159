"""An exercise as a learner meets it: write the fan-in, run, read the failures, fix, pass."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

DIVE = "/flows/parent-and-children"
YOUR_PART = "  -- YOUR PART: the fan-in of a same-queue child."

# a first try that forgets the guard: it counts every call, the redelivered one too
CARELESS = """  redis.call('HSET', KEYS[4], job_id, ARGV[5])
  local left = redis.call('DECR', KEYS[3])
  if left == 0 then
    redis.call('ZADD', base .. 'pending', 0, ARGV[4])
    redis.call('HSET', KEYS[5], 'state', 'pending')
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


def exercise(page: Page) -> object:
    return page.get_by_role("region", name="Exercise: Count the children down")


def test_a_learner_writes_the_fan_in_fails_a_check_fixes_it_and_passes_them_all(page: Page) -> None:
    page.goto(DIVE)
    region = page.get_by_role("region", name="Exercise: Count the children down")
    editor = region.get_by_label("Your script")
    starter = editor.input_value()
    assert YOUR_PART in starter
    # the starter as it is: the checks that need the learner's part fail
    region.get_by_role("button", name="Run the checks").click()
    results = region.locator('[data-role="results"] li')
    expect(region.locator('[data-role="status"]')).to_have_text(re.compile(r"^\d of 6 checks passed\.$"))
    expect(results.filter(has_text="three children: failed")).to_have_count(1)
    # a first try without the guard: a late completion is counted again
    editor.fill(starter.replace(YOUR_PART, YOUR_PART + "\n" + CARELESS))
    region.get_by_role("button", name="Run the checks").click()
    failed = results.filter(has_text="a completion after the lease lapsed: failed")
    expect(failed).to_have_count(1)
    failed.locator("summary").click()
    expect(failed.locator("table.keys").first).to_be_visible()  # the keys before and after the script
    # fixed: every check passes, and the learner's record says so
    editor.fill(starter.replace(YOUR_PART, YOUR_PART + "\n" + CAREFUL))
    region.get_by_role("button", name="Run the checks").click()
    expect(region.locator('[data-role="status"]')).to_have_text("6 of 6 checks passed.")
    expect(results.filter(has_text=": passed")).to_have_count(6)
    page.goto("/progress")
    expect(page.locator('[data-progress-of="ex:fan-in"]')).to_contain_text("best run: 6 of 6 checks passed")


def test_without_javascript_the_exercise_is_a_form_that_posts_and_shows_the_results(browser, site) -> None:
    context = browser.new_context(base_url=site.url, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(DIVE)
        region = page.get_by_role("region", name="Exercise: Count the children down")
        region.get_by_role("button", name="Run the checks").click()
        expect(page.locator("h1")).to_have_text("Exercise: Count the children down")
        expect(page.locator(".exercise-summary")).to_have_text(re.compile(r"^\d of 6 checks passed\.$"))
        expect(page.locator(".exercise-results li").filter(has_text="failed").first).to_be_visible()
    finally:
        context.close()
