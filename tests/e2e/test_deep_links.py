"""Deep links: `#step=N` opens a page's first widget at step N of its tour,
`#<widget>-step=N` any widget, rebuilt in the learner's own sandbox by
replaying the tour's actions on Valkey (a widget's `tour`: `Step(id, label,
replay)`). The tests read Valkey directly, through the page's own sandbox
(from its signed cookie), and compare it with the keys the page shows."""

from __future__ import annotations

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.conftest import Site
from tests.e2e.pages import DIVES, WIDGETS, on_dive, region, wait_until_live


def outcome(widget: Locator) -> Locator:
    return widget.locator('[data-role="outcome"]')


def at_step(widget: Locator, name: str, step: int) -> None:
    tour = WIDGETS[name].widget.tour
    expect(outcome(widget)).to_contain_text(f"Step {step} of {len(tour)} ({tour[step - 1].label}), replayed on Valkey")


def shown_keys(widget: Locator) -> dict[str, str]:
    rows = widget.locator('[data-role="keys"] tr[data-key]')
    return dict(rows.evaluate_all("(rows) => rows.map((r) => [r.dataset.key, r.querySelector('.key-type').textContent])"
                                  ))


def held_keys(site: Site, context: BrowserContext, name: str) -> dict[str, str]:
    sandbox = site.sandbox_of(context)
    held: dict[str, str] = {}
    for part in WIDGETS[name].widget.queue_parts:
        held.update(site.keys_of(sandbox, part))
    return held


@pytest.mark.parametrize("name", list(WIDGETS))
def test_every_step_of_a_widgets_tour_opens_from_its_link_showing_the_keys_valkey_holds(
    page: Page, context: BrowserContext, site: Site, name: str
) -> None:
    tour = WIDGETS[name].widget.tour
    assert tour, f"{name} has no tour"
    page.goto(f"{WIDGETS[name].dive}#{name}-step=1")
    widget = region(page, name)
    for step in range(1, len(tour) + 1):
        if step > 1:
            page.evaluate(f"location.hash = '#{name}-step={step}'")  # the open page follows its hash
        at_step(widget, name, step)
        # the page shows, under the names a learner writes, exactly the keys Valkey holds now
        assert shown_keys(widget) == held_keys(site, context, name), f"step {step}"
        # and the readout is the one the state API reads from Valkey now (one drawing, one truth)
        said = page.request.get(f"/api/widgets/{name}/state").json()["snapshot"]
        expect(widget.locator('[data-role="readout"]')).to_have_text(said["problem"] or said["readout"])


@pytest.mark.parametrize("dive", DIVES)
def test_a_plain_step_link_opens_the_pages_first_widget_and_leaves_the_others_alone(page: Page, dive: str) -> None:
    page.goto(dive)
    wait_until_live(page)
    first, *others = on_dive(dive)
    versions = {name: region(page, name).get_attribute("data-ver") for name in others}
    page.evaluate("location.hash = '#step=1'")
    at_step(region(page, first), first, 1)
    for name, ver in versions.items():
        expect(region(page, name)).to_have_attribute("data-ver", ver or "")


def test_a_step_past_the_tour_says_how_many_steps_it_has_and_opens_the_last(page: Page) -> None:
    name = list(WIDGETS)[-1]
    total = len(WIDGETS[name].widget.tour)
    page.goto(f"{WIDGETS[name].dive}#{name}-step=99")
    widget = region(page, name)
    expect(outcome(widget)).to_contain_text(f"The tour has {total} steps; here is the last. Step {total} of {total}")
    expect(widget.locator('[data-role="status"]')).to_have_text("")


def test_a_widget_step_link_scrolls_to_the_widget_and_focuses_it(page: Page) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    # a widget low on its page: the last of the dive that places the most
    name = on_dive(max(DIVES, key=lambda dive: len(on_dive(dive))))[-1]
    page.goto(f"{WIDGETS[name].dive}#{name}-step=2")
    widget = region(page, name)
    at_step(widget, name, 2)
    expect(widget).to_be_focused()
    expect(widget).to_be_in_viewport()
