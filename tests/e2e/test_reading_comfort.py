"""Reading comfort at 1280×900 and 390×844: hands-on at once, as tight as the
original, nothing clipped, the answer in view, no internal name on show.

Issue 31's measure, per dive and size (the figures are printed, run with -s,
and kept as the test's properties): the first action button of a widget
must sit within the first screen at 1280×900 and within the second at
390×844; the dive's prose, counted as the issue counts it
(tests/unit/content/prose.py on the page Chromium shows), is at most 1.5×
the words of the seed page it is built from, code included (a dive with no
seed page: at most 1,500). The console, the exercises and the learner's
progress line are left out with the widgets: they are not the lesson's prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import COURSE, DIVES, app_pages, on_dive, region, settled_after, wait_until_live
from tests.unit.content.prose import prose_words
from tests.unit.content.test_content_prose import BUILT_FROM, NO_SEED_BOUND, SEED_WORDS

VIEWPORTS = {"desktop": (1280, 900), "phone": (390, 844)}
SCREENS = {"desktop": 1, "phone": 2}  # the first button within this many screens

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

# The first action button of any widget, and the first control of any kind, from the page's top.
FIRST_CONTROLS = """() => {
  const shown = (n) => n.offsetParent !== null;
  const top = (n) => Math.round(n.getBoundingClientRect().top + window.scrollY);
  const widgets = '[data-widget]';
  const any = [...document.querySelectorAll(`${widgets} button, ${widgets} input, ${widgets} select`)].filter(shown);
  const buttons = any.filter((n) => n.matches('button[data-action]:not([disabled])'));
  const first = (list) => list.reduce((a, b) => (top(b) < top(a) ? b : a));
  const button = first(buttons), control = first(any);
  return { button: button.textContent.trim(), button_top: top(button),
           control: control.outerHTML.slice(0, 60), control_top: top(control),
           height: document.documentElement.scrollHeight };
}"""

# The page as Chromium holds it, with the console, the exercises and the progress line marked
# as widgets so that prose.py leaves them out as it leaves out the widgets.
PAGE_FOR_COUNTING = """() => {
  const copy = document.documentElement.cloneNode(true);
  copy.querySelectorAll('[data-console], [data-exercise], [data-role="dive-progress"]')
    .forEach((n) => n.setAttribute('data-widget', ''));
  return copy.outerHTML;
}"""


def seed_words(path: str) -> tuple[int, str]:
    """The bound of a dive's prose and where it comes from."""
    seed = BUILT_FROM.get(path)
    if seed is None:
        return NO_SEED_BOUND, f"no seed page: at most {NO_SEED_BOUND:,}"
    words = SEED_WORDS[seed]  # as recorded; the unit suite checks them against the pages where they are
    return int(1.5 * words), f"1.5 × {words:,} words of {seed}"


@pytest.fixture(params=list(VIEWPORTS), ids=list(VIEWPORTS))
def sized(request: pytest.FixtureRequest, browser: Browser, site: Site) -> Iterator[tuple[str, BrowserContext]]:
    width, height = VIEWPORTS[request.param]
    ctx = browser.new_context(base_url=site.url, viewport={"width": width, "height": height}, reduced_motion="reduce")
    ctx.set_default_timeout(10_000)
    yield request.param, ctx
    ctx.close()


@pytest.mark.parametrize("path", DIVES)
def test_a_dive_is_hands_on_within_its_first_screens_and_as_tight_as_its_seed(
    sized: tuple[str, BrowserContext], path: str, record_property: Callable[[str, object], None]
) -> None:
    size, ctx = sized
    width, height = VIEWPORTS[size]
    page = ctx.new_page()
    page.goto(path)
    wait_until_live(page)
    first = page.evaluate(FIRST_CONTROLS)
    words = prose_words(page.evaluate(PAGE_FOR_COUNTING))
    bound, why = seed_words(path)
    limit = SCREENS[size] * height
    figures = (f"{path} at {width}×{height}: first button “{first['button']}” at {first['button_top']:,} px "
               f"(bound {limit:,}; first control of any kind at {first['control_top']:,} px: {first['control']}), "
               f"page {first['height']:,} px; prose {words:,} words (bound {bound:,}: {why})")
    print("\n" + figures)
    for key in ("button", "button_top", "control_top", "height"):
        record_property(key, first[key])
    record_property("prose_words", words)
    record_property("prose_bound", bound)
    # and, at this size, nothing clipped once every fold is open (measured after the figures)
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    assert page.evaluate(CLIPPED) == []
    # hands-on on the first screen: its first control (a question a learner answers before its
    # button, issue 41) within it, and the button that question rides on just below, if not on it
    assert first["control_top"] < limit and first["button_top"] < limit * 1.4 and words <= bound, figures


@pytest.mark.parametrize("path", [*(p for p in COURSE if p not in DIVES), *app_pages()])
def test_no_page_scrolls_sideways_and_no_listing_line_is_clipped(sized: tuple[str, BrowserContext], path: str) -> None:
    """On the pages without widgets (a dive is measured with its figures above).
    Issue 31: /progress scrolled sideways at 390 px."""
    page = sized[1].new_page()
    page.goto(path)
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    assert page.evaluate(CLIPPED) == []


@pytest.mark.parametrize("path", DIVES)
def test_after_each_widgets_main_action_its_outcome_is_in_the_viewport(
    sized: tuple[str, BrowserContext], path: str
) -> None:
    page = sized[1].new_page()
    page.goto(path)
    wait_until_live(page)
    for name in on_dive(path):
        box = region(page, name)
        page.evaluate("window.scrollTo(0, 0)")
        before = box.get_attribute("data-ver")
        box.locator("button[data-action].primary").click()
        settled_after(box, before)
        _wait_in_view(page, box.locator('[data-role="outcome"]').element_handle())


def _wait_in_view(page: Page, handle: object) -> None:
    page.wait_for_function(
        """(node) => {
          const r = node.getBoundingClientRect();
          return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight;
        }""",
        arg=handle,
    )


def test_no_dive_shows_the_visitors_sandbox_id(page: Page, site: Site) -> None:
    """Keys are named as the learner writes them; a value that holds a queue's
    name (a child's parent_queue, an outbox entry) is no exception (issue 31)."""
    for path in DIVES:
        page.goto(path)
        wait_until_live(page)
        sandbox = site.sandbox_of(page.context)
        for name in on_dive(path):
            box = region(page, name)
            before = box.get_attribute("data-ver")
            box.locator("button[data-action].primary").click()
            settled_after(box, before)
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        text = page.locator("main").inner_text()
        shown = [text[max(0, m.start() - 60): m.end() + 20] for m in re.finditer(re.escape(sandbox), text)]
        assert not shown, f"{path}: {shown}"


def test_without_javascript_trace_rows_show_every_field_name_of_a_row(browser: Browser, site: Site) -> None:
    ctx = browser.new_context(base_url=site.url, java_script_enabled=False, viewport={"width": 390, "height": 844})
    try:
        page = ctx.new_page()
        cut = []
        for path in DIVES:
            page.goto(path)
            values = page.locator(".trace-value").all_text_contents()
            cut += [v for v in values if re.search(r"(^|, )[a-z_]*…", v)]
        assert not cut, f"a field name was cut: {cut}"
    finally:
        ctx.close()


def test_every_write_a_press_causes_is_said_in_words_in_the_effects_log(page: Page) -> None:
    for path in DIVES:
        page.goto(path)
        wait_until_live(page)
        for name in on_dive(path):
            box = region(page, name)
            box.locator(".effects-box summary").click()
            before = box.get_attribute("data-ver")
            box.locator("button[data-action].primary").click()
            settled_after(box, before)
        log = page.locator('[data-widget] [data-role="effects"] .effect')
        expect(log.first).to_be_visible()
        for entry in range(log.count()):
            expect(log.nth(entry).locator(".effect-words")).not_to_be_empty()


def test_key_names_may_break_only_after_a_colon_or_a_closing_brace(page: Page) -> None:
    page.goto(DIVES[0])
    wait_until_live(page)
    page.evaluate("document.querySelectorAll('details.raw-keys').forEach((d) => { d.open = true; })")
    name = page.locator("[data-widget] td.key-name").first
    expect(name).to_have_text(re.compile(r"^emq:\{"))
    pieces = name.evaluate(
        "(td) => [...td.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent)"
    )
    assert "".join(pieces).startswith("emq:{")
    assert all(p.endswith((":", "}")) for p in pieces[:-1]), pieces
    joints = sum(1 for p in pieces if p.endswith((":", "}")))
    assert name.evaluate("(td) => td.querySelectorAll('wbr').length") == joints >= 2
