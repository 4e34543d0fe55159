"""Reading comfort at 1280×900 and 390×844: nothing clipped, the answer in view.

No listing line and no key name may be cut off (its box is as wide as its
text, or the text wraps), and after a widget's main button the outcome the
server sent is inside the viewport when the click is done.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.pages import COURSE, WIDGETS, region, wait_until_live
from tests.support import Site

VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}
# widget -> the button a learner presses first
MAIN_ACTION = {
    "enqueue-stepper": "Next move",
    "fanin": "Complete child",
    "native": "Send as EMQ.COMPLETE",
    "results": "Complete child",
    "outbox": "Complete child",
    "failure-policy": "Fail child at the cap",
    "ledger": "Next flow",
}

CLIPPED = """() => {
  const shown = (node) => node.offsetParent !== null;
  const bad = [];
  for (const pre of document.querySelectorAll('figure.listing pre, .prose > pre')) {
    if (shown(pre) && pre.scrollWidth > pre.clientWidth + 1) {
      const figure = pre.closest('figure');
      const label = figure ? figure.dataset.script || figure.dataset.host : 'text';
      bad.push(`listing ${label}: ${pre.scrollWidth} > ${pre.clientWidth}`);
    }
  }
  for (const name of document.querySelectorAll('td.key-name, .effect-key, code.trace-key, .sets-title')) {
    if (shown(name) && name.scrollWidth > name.clientWidth + 1) bad.push(`key ${name.textContent}`);
  }
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth) bad.push(`page ${root.scrollWidth} > ${root.clientWidth}`);
  return bad;
}"""


@pytest.fixture(params=list(VIEWPORTS), ids=list(VIEWPORTS))
def sized(request: pytest.FixtureRequest, browser: Browser, site: Site) -> Iterator[BrowserContext]:
    width, height = VIEWPORTS[request.param]
    ctx = browser.new_context(base_url=site.url, viewport={"width": width, "height": height}, reduced_motion="reduce")
    ctx.set_default_timeout(10_000)
    yield ctx
    ctx.close()


@pytest.mark.parametrize("path", COURSE)
def test_no_listing_line_and_no_key_name_is_clipped(sized: BrowserContext, path: str) -> None:
    page = sized.new_page()
    page.goto(path)
    wait_until_live(page)
    # the key panels and logs are folded by default: open them so they are measured too
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    assert page.evaluate(CLIPPED) == []


@pytest.mark.parametrize("widget", list(MAIN_ACTION))
def test_after_the_main_action_the_outcome_is_in_the_viewport(sized: BrowserContext, widget: str) -> None:
    page = sized.new_page()
    page.goto(WIDGETS[widget][0])
    wait_until_live(page)
    box = region(page, widget)
    box.get_by_role("button", name="Reset", exact=True).click()
    expect(box.locator('[data-role="outcome"]')).to_contain_text("Reset")
    page.evaluate("window.scrollTo(0, 0)")
    box.get_by_role("button", name=MAIN_ACTION[widget], exact=True).click()
    outcome = box.locator('[data-role="outcome"]')
    expect(outcome).not_to_contain_text(re.compile(r"^Reset"))
    _wait_in_view(page, outcome.element_handle())


def _wait_in_view(page: Page, handle: object) -> None:
    page.wait_for_function(
        """(node) => {
          const r = node.getBoundingClientRect();
          return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;
        }""",
        arg=handle,
    )


def test_without_javascript_trace_rows_show_every_field_name_of_a_row(browser: Browser, site: Site) -> None:
    ctx = browser.new_context(base_url=site.url, java_script_enabled=False, viewport={"width": 390, "height": 844})
    try:
        page = ctx.new_page()
        page.goto("/flows/cross-queue")
        values = page.locator(".trace-value").all_text_contents()
        rows = [v for v in values if "parent=" in v]
        assert rows, "the cross-queue trace shows child rows"
        assert any("parent_queue=" in v for v in rows)
        assert not any(re.search(r"(^|, )[a-z_]*…", v) for v in values), "a field name was cut"
    finally:
        ctx.close()


def test_the_effects_log_says_what_each_write_did_in_the_courses_words(page: Page) -> None:
    page.goto("/flows/parent-and-children")
    wait_until_live(page)
    fanin = region(page, "fanin")
    fanin.get_by_role("button", name="Reset", exact=True).click()
    expect(fanin.locator('[data-role="dependencies"]')).to_have_text("3")
    fanin.locator(".effects-box summary").click()
    fanin.get_by_role("button", name="Complete child", exact=True).click()
    log = fanin.locator('[data-role="effects"]')
    decrement = log.locator(".effect", has_text=":job:JOBparent:dependencies").filter(has_text="incrby").first
    expect(decrement.locator(".effect-words")).to_have_text("one fewer outstanding child")
    recorded = log.locator(".effect", has_text=":job:JOBparent:processed").first
    expect(recorded.locator(".effect-words")).to_have_text("recorded the child's result")


def test_key_names_may_break_only_after_a_colon_or_a_closing_brace(page: Page) -> None:
    page.goto("/flows/cross-queue")
    wait_until_live(page)
    outbox = region(page, "outbox")
    outbox.locator(".raw-keys summary").click()
    name = outbox.locator("td.key-name").first
    expect(name).to_have_text(re.compile(r"^emq:\{"))
    pieces = name.evaluate(
        "(td) => [...td.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent)"
    )
    assert "".join(pieces).startswith("emq:{")
    assert all(p.endswith((":", "}")) for p in pieces[:-1]), pieces
    joints = sum(1 for p in pieces if p.endswith((":", "}")))
    assert name.evaluate("(td) => td.querySelectorAll('wbr').length") == joints >= 3
