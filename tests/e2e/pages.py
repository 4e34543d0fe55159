"""What the e2e suite knows of the course, read from the code, never listed by hand.

The pages come from the course the site loads (`server.content.load_course`):
the index, the hubs and the dives in course order. The widgets are the ones
the site finds (`server.widgets.WIDGETS`); each lives on the dive that places
it (`course.placements()`). A widget's root on a page is its
`<section data-widget="<name>">`; the words its region's name must contain
are the design's contract (tests/contract.py), checked in test_accessibility.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from playwright.sync_api import Locator, Page, expect
from starlette.routing import Route

from server.app import create_app
from server.content import load_course
from server.settings import Settings
from server.widgets import WIDGETS as FOUND
from server.widgets.base import Widget

SITE = Path(__file__).resolve().parents[2] / "site"
THE_COURSE = load_course(SITE / "content", known_widgets=None)

INDEX = THE_COURSE.index.path
HUBS = tuple(hub.path for hub in THE_COURSE.hubs)
DIVES = tuple(dive.path for dive in THE_COURSE.dives)
COURSE = (INDEX, *HUBS, *DIVES)


class Placed(NamedTuple):
    """A widget the site found and the dive that places it (`[0]` is the dive)."""

    dive: str
    widget: Widget


def _placed() -> dict[str, Placed]:
    found: dict[str, Placed] = {}
    for page, placement in THE_COURSE.placements():
        if placement.name in FOUND and placement.name not in found:
            found[placement.name] = Placed(page.path, FOUND[placement.name])
    unplaced = sorted(set(FOUND) - set(found))
    assert not unplaced, f"widgets no dive places: {unplaced}"
    return found


# widget name -> its dive and the widget; in course order (the order of the placements)
WIDGETS = _placed()


def app_pages() -> list[str]:
    """The site's own pages besides the course (progress, a room, the
    instructor's sign-in…): every GET route without a parameter whose view
    is a page (the views name their HTML endpoint `page` or `…_page`), from the app."""
    app = create_app("redis://127.0.0.1:1/0", Settings(secret="only-to-list-the-routes" * 2), cluster=False)
    return sorted(route.path for route in app.routes
                  if isinstance(route, Route) and "GET" in (route.methods or ()) and "{" not in route.path
                  and route.endpoint.__name__.rpartition("_")[2] == "page" and route.path not in COURSE)


def on_dive(dive: str) -> list[str]:
    """The widgets a dive places, in the page's order."""
    return [name for name, placed in WIDGETS.items() if placed.dive == dive]


def region(page: Page, widget: str) -> Locator:
    """The widget's root on the page: its `<section data-widget>` region."""
    return page.locator(f'section[data-widget="{widget}"]')


# The `ver` of a drawing of the visitor's own sandbox; a first visit's page is drawn from the
# specimen (server/widgets/specimen.py) at ver 0 until the stream's first frame replaces it.
OWN_VER = re.compile(r"^[1-9]\d*$")


def wait_until_live(page: Page) -> None:
    """Every widget on the page has drawn the keys Valkey returned for the visitor's own sandbox."""
    widgets = page.locator("[data-widget]")
    for i in range(widgets.count()):
        widget = widgets.nth(i)
        expect(widget).to_have_class(re.compile(r"\bis-live\b"))
        expect(widget).to_have_attribute("data-ver", OWN_VER)
        expect(widget.locator('[data-role="readout"]')).not_to_have_text(re.compile(r"^(Reading the keys.*)?$"))


# -- a widget's controls, and pressing one ------------------------------------------

# What acts when pressed: buttons, and the boxes that post on change (`data-send`); a box
# that only rides along with an action (the race's faults) is a choice, not a control.
CONTROLS = ", ".join(f".controls {kind}" for kind in (
    "button[data-action]", "button[data-flow]", "button[data-own-action]",
    "input[type=checkbox][data-send]", "input[type=radio][data-send]"))


def controls(widget: Locator) -> list[str]:
    """A selector for each control a learner can press in the widget, in page
    order, Reset last (it undoes what the others did). A selector, not a
    position: a widget may redraw its controls (the ledger's Flow N buttons)."""
    found = widget.locator(CONTROLS).evaluate_all("""(nodes) => nodes
        .filter((n) => n.offsetParent !== null)
        .map((n) => n.dataset.action ? `button[data-action="${n.dataset.action}"]`
          : n.dataset.flow ? `button[data-flow="${n.dataset.flow}"]`
          : n.dataset.ownAction ? `button[data-own-action="${n.dataset.ownAction}"]`
          : n.type === "radio" ? `input[type=radio][data-send][value="${n.value}"]`
          : `input[data-role="${n.dataset.role}"]`)""")
    return sorted(dict.fromkeys(found), key=lambda s: s == 'button[data-action="reset"]')


def settled_after(widget: Locator, before: str | None) -> None:
    """The press was answered: the widget painted a newer state, or said why not."""
    widget.page.wait_for_function(
        """([root, before]) => root.getAttribute("aria-busy") !== "true" && (root.dataset.ver !== before
             || root.querySelector('[data-role="status"]').dataset.kind === "error")""",
        arg=[widget.element_handle(), before or ""], polling=50,
    )


def press_every_control(widget: Locator, operate: Callable[[str, int], bool],
                        after: Callable[[str], None] = lambda _: None) -> list[str]:
    """Press every control of the widget once with `operate(selector, turn)`
    (False: nothing to do now), waiting for each answer, then call `after`.

    A control with nothing to do yet (Previous at the start, a radio already
    chosen, a button the state disables) is tried again after each press
    that worked; Reset goes last. Returns what was pressed, in order."""
    # the page acted on is the front tab: a hidden one runs its animation frames once a second
    widget.page.bring_to_front()
    found = controls(widget)
    waiting: list[str] = []
    pressed: list[str] = []
    for selector in found:
        for tried in [*waiting, selector] if selector != found[-1] else [selector]:
            before = widget.get_attribute("data-ver")
            if not operate(tried, len(pressed)):
                if tried == selector:
                    waiting.append(selector)
                continue
            settled_after(widget, before)
            status = widget.locator('[data-role="status"]').text_content()
            assert widget.get_attribute("data-ver") != before, f"{tried} changed nothing: {status}"
            pressed.append(tried)
            if tried in waiting:
                waiting.remove(tried)
            after(tried)
    assert sorted(pressed) == sorted(found), f"never pressed: {sorted(set(found) - set(pressed))}"
    return pressed


def click(widget: Locator, selector: str) -> bool:
    """Click a control of the widget; False when there is nothing to press now
    (a disabled button, or the radio already chosen)."""
    control = widget.locator(selector)
    if control.is_disabled() or (control.get_attribute("type") == "radio" and control.is_checked()):
        return False
    control.click()
    return True
