"""One truth on every page: two pages of one sandbox paint the same snapshot.

Every control of every widget is pressed on page A; page B, which nobody
touches, must show the same version of the widget's state, the same readout,
outcome, picture, keys, choices, checklist, progress and open questions,
from the stream alone. The widgets and their controls come from the code
and the page, not from a list.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.pages import WIDGETS, click, press_every_control, region, wait_until_live

OTHER_PAGE = "From another page of this sandbox: "

# Everything a learner reads in a widget, as one value (a page paints a snapshot in one go).
SEEN = """(root) => {
  const text = (role) => { const n = root.querySelector(`[data-role="${role}"]`); return n ? n.innerText : null; };
  const outcome = root.querySelector('[data-role="outcome"]');
  return {
    ver: root.dataset.ver,
    readout: text("readout"),
    outcome: outcome.hidden ? null : outcome.innerText,
    picture: text("picture"),
    sets: text("sets"),
    progress: text("widget-progress"),
    keys: [...root.querySelectorAll('[data-role="keys"] tr[data-key]')].map((r) =>
      [r.dataset.key, r.querySelector(".key-type").textContent, r.querySelector(".key-value").textContent]),
    choices: [...root.querySelectorAll(".controls input[type=checkbox], .controls input[type=radio]")]
      .map((x) => x.checked),
    reached: [...root.querySelectorAll('[data-role="checklist"] li.reached')].map((li) => li.dataset.step),
    questions: [...root.querySelectorAll('[data-role="predict"] fieldset')].map((f) => f.dataset.question),
  };
}"""


def seen(widget: Locator) -> dict[str, Any]:
    shown: dict[str, Any] = widget.evaluate(SEEN)
    if shown["outcome"] is not None:
        shown["outcome"] = shown["outcome"].replace(OTHER_PAGE, "", 1)
    return shown


def same_on_both(a: Locator, b: Locator) -> None:
    expect(b).to_have_attribute("data-ver", a.get_attribute("data-ver") or "")
    assert seen(b) == seen(a)


def two_pages(context: BrowserContext, dive: str) -> tuple[Page, Page]:
    pages = context.new_page(), context.new_page()
    for page in pages:
        page.goto(dive)
        wait_until_live(page)
    return pages


@pytest.mark.parametrize("name", list(WIDGETS))
def test_every_control_pressed_on_one_page_shows_on_the_other_page_of_the_sandbox(
    context: BrowserContext, name: str
) -> None:
    page_a, page_b = two_pages(context, WIDGETS[name].dive)
    a, b = region(page_a, name), region(page_b, name)
    same_on_both(a, b)
    pressed = press_every_control(a, lambda selector, _: click(a, selector), lambda _: same_on_both(a, b))
    assert len(pressed) >= 2  # every control the widget draws (press_every_control checks), Run and Reset at least


def test_an_outcome_never_outlives_the_state_it_describes(context: BrowserContext) -> None:
    """After another page resets the widget, the old outcome goes with the old state."""
    name = next(iter(WIDGETS))
    page_a, page_b = two_pages(context, WIDGETS[name].dive)
    a, b = region(page_a, name), region(page_b, name)
    b.locator("button[data-action].primary").click()
    expect(a.locator('[data-role="outcome"]')).to_contain_text(OTHER_PAGE)
    b.locator('button[data-action="reset"]').click()
    expect(a.locator('[data-role="outcome"]')).to_have_text(re.compile("^" + re.escape(OTHER_PAGE) + "Reset"))
    same_on_both(a, b)


def test_only_an_outcome_caused_while_the_page_was_open_is_said_to_come_from_another_page(
    context: BrowserContext,
) -> None:
    """Issue 31: on reload or in a new tab, the learner's own last outcome was
    labelled "From another page of this sandbox". A page says so only of an
    outcome another page caused while it was open."""
    name = next(iter(WIDGETS))
    page_a, page_b = two_pages(context, WIDGETS[name].dive)
    a = region(page_a, name)
    before = a.get_attribute("data-ver")
    a.locator("button[data-action].primary").click()
    expect(a).not_to_have_attribute("data-ver", before or "")
    said = a.locator('[data-role="outcome"]').inner_text()
    assert not said.startswith(OTHER_PAGE), said
    # the page that was open when A acted: another page did it
    expect(region(page_b, name).locator('[data-role="outcome"]')).to_have_text(OTHER_PAGE + said)
    # A reloaded, and a tab opened afterwards: the same outcome, unlabelled
    page_a.reload()
    wait_until_live(page_a)
    page_c = context.new_page()
    page_c.goto(WIDGETS[name].dive)
    wait_until_live(page_c)
    for page in (page_a, page_c):
        expect(region(page, name).locator('[data-role="outcome"]')).to_have_text(said)
