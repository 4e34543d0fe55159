"""One paint per click on the page that clicked (site/static/widgets/lab.js, `hold`).

The stream's frames for a change (its effects, its snapshot) reach the page
that clicked before the answer does; while the click is in flight they
wait, and the answer's paint and the effects log's entries land in the same
task. An answer slower than 300 ms dims the widget and lets the stream's
frames through, so a slow answer never hides a change Valkey already made.

The answer is held back in the browser (a Playwright route fetches the real
answer from the site, then waits before handing it to the page), so the
stream's frames certainly arrive first. A MutationObserver in the page
records which parts of the widget each of its callbacks saw change.
"""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import Page, Route, expect

from tests.e2e.pages import WIDGETS, region, wait_until_live

DIVE = WIDGETS["fanin"][0]

# Clicks "Complete child" and resolves, once the widget showed `want` with
# its click over and 400 ms went by without a change, with one entry per
# observer callback: [ms since the click, the parts it saw change].
RECORD_JS = """
async ([want]) => {
  const root = document.querySelector('[data-widget="fanin"]');
  const shown = () => root.querySelector('[data-role="dependencies"]')?.textContent;
  const seen = [];
  const t0 = performance.now();
  const part = (m) => {
    if (m.target === root && m.type === "attributes") {
      const name = m.attributeName;
      if (name === "class") return root.classList.contains("is-waiting") ? "dimmed" : "undimmed";
      return name === "aria-busy" ? (root.hasAttribute("aria-busy") ? "busy" : "answered") : name;
    }
    for (let n = m.target; n && n !== root; n = n.parentNode) if (n.dataset && n.dataset.role) return n.dataset.role;
    return m.target.nodeName;
  };
  return await new Promise((resolve) => {
    let quiet = 0;
    const done = () => { observer.disconnect(); resolve(seen); };
    const observer = new MutationObserver((records) => {
      seen.push([performance.now() - t0, [...new Set(records.map(part))]]);
      clearTimeout(quiet);
      if (shown() === want && !root.hasAttribute("aria-busy")) quiet = setTimeout(done, 400);
    });
    observer.observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
    root.querySelector('button[data-action="complete-child"]').click();
  });
}
"""


def answer_late(page: Page, seconds: float) -> None:
    """The page's "Complete child" answers reach it `seconds` after the site sent them."""

    def late(route: Route) -> None:
        answer = route.fetch()
        time.sleep(seconds)
        route.fulfill(response=answer)

    page.route("**/api/widgets/fanin/complete-child", late)


def opened(page: Page) -> None:
    page.goto(DIVE)
    wait_until_live(page)
    widget = region(page, "fanin")
    widget.get_by_role("button", name="Reset", exact=True).click()
    expect(widget.locator('[data-role="dependencies"]')).to_have_text("3")
    expect(widget.locator('[data-role="effects"] li')).not_to_have_count(0)  # the Reset's effects came
    time.sleep(0.3)  # the Reset's stream frames are all in


def callbacks_with(seen: list[Any], part: str) -> list[int]:
    return [i for i, (_, parts) in enumerate(seen) if part in parts]


def test_the_streams_frames_wait_for_the_answer_and_paint_with_it(page: Page) -> None:
    opened(page)
    answer_late(page, 0.15)
    seen = page.evaluate(RECORD_JS, ["2"])
    painted, logged = callbacks_with(seen, "picture"), callbacks_with(seen, "effects")
    # the counter, the keys and the effects log changed once, all in the answer's task
    assert len(painted) == 1 and logged == painted, seen
    assert callbacks_with(seen, "keys") == painted and callbacks_with(seen, "answered") == painted, seen
    assert callbacks_with(seen, "busy") == [0] and not callbacks_with(seen, "dimmed"), seen
    assert seen[painted[0]][0] >= 150, seen  # nothing was drawn before the answer came


def test_a_slow_answer_dims_the_widget_and_lets_the_stream_show_the_change(page: Page) -> None:
    opened(page)
    answer_late(page, 0.9)
    seen = page.evaluate(RECORD_JS, ["2"])
    painted, answered = callbacks_with(seen, "picture"), callbacks_with(seen, "answered")
    # 300 ms in: dimmed, and the stream's frames drawn (the change Valkey made)
    assert callbacks_with(seen, "dimmed") == painted and callbacks_with(seen, "effects") == painted, seen
    assert len(painted) == 1 and 250 <= seen[painted[0]][0] < 900, seen
    # the answer: undimmed and no longer busy, the same snapshot drawn again nowhere
    assert len(answered) == 1 and answered[0] > painted[0] and seen[answered[0]][0] >= 900, seen
    assert callbacks_with(seen, "undimmed") == answered, seen
    assert "keys" not in seen[answered[0]][1] and "picture" not in seen[answered[0]][1], seen
    expect(region(page, "fanin")).not_to_have_class("is-waiting")
