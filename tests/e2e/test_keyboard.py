"""Every control of every widget, operated by the keyboard alone.

No click anywhere: focus moves with the Tab key from the widget's first
control, a button is pressed with Enter or Space (in turn), a checkbox
toggles with Space, a radio group moves with the arrow keys. Each press must
be answered by the server (the widget paints a newer state of Valkey), the
focus ring must show, and the aria-live region must announce the outcome,
one sentence of at most about 25 words (issue 31).
The widgets and their controls come from the page and the code, not a list.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.pages import DIVES, WIDGETS, on_dive, press_every_control, region, wait_until_live

ONE_BREATH = 25  # words of an outcome


def tab_to(page: Page, widget: Locator, target: Locator) -> None:
    """Focus the widget's first control, then press Tab until `target` has focus."""
    widget.locator(".controls").first.locator("button:visible:enabled, input:visible:enabled").first.focus()
    for _ in range(60):
        if target.evaluate("(node) => node === document.activeElement"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("Tab never reached the control")
    # keyboard focus is visible: the focus ring is drawn
    outline = target.evaluate("(node) => getComputedStyle(node).outlineStyle")
    assert outline not in ("", "none"), outline


def open_widget(page: Page, widget: str) -> Locator:
    page.goto(WIDGETS[widget].dive)
    wait_until_live(page)
    return region(page, widget)


def press(page: Page, widget: Locator, name: str, key: str = "Enter") -> None:
    """Tab to the button labelled `name` and press it with `key`."""
    tab_to(page, widget, widget.get_by_role("button", name=name, exact=True))
    page.keyboard.press(key)


def announced(widget: Locator) -> Locator:
    """The widget's aria-live region: what a screen reader says."""
    return widget.locator('[data-role="announce"]')


def operate(page: Page, widget: Locator, selector: str, turn: int) -> bool:
    """Operate one control by keyboard; False when there was nothing to do (disabled, already chosen)."""
    control = widget.locator(selector)
    kind = control.evaluate("(n) => n.type")
    if control.is_disabled() or (kind == "radio" and control.is_checked()):
        return False
    if kind == "radio" and widget.locator(f'input[type=radio][name="{control.get_attribute("name")}"]:checked').count():
        # Tab lands on the group's checked radio; the arrows move the choice
        group = f'input[type=radio][name="{control.get_attribute("name")}"]'
        checked = widget.locator(f"{group}:checked")
        tab_to(page, widget, checked)
        radios = widget.locator(group).evaluate_all("(xs) => xs.map((x) => x.value)")
        ahead = radios.index(control.get_attribute("value")) > radios.index(checked.get_attribute("value"))
        page.keyboard.press("ArrowDown" if ahead else "ArrowUp")
    else:
        # a button, a checkbox, or a radio of a group where none is chosen yet
        tab_to(page, widget, control)
        page.keyboard.press(" " if kind in ("checkbox", "radio") or turn % 2 else "Enter")
    return True


@pytest.mark.parametrize("dive", DIVES)
def test_every_control_of_every_widget_works_by_keyboard_and_is_announced_in_one_breath(
    page: Page, dive: str
) -> None:
    page.goto(dive)
    wait_until_live(page)
    for name in on_dive(dive):
        widget = region(page, name)

        def spoken(_: str, widget: Locator = widget) -> None:
            said = widget.locator('[data-role="outcome"] .outcome-text').inner_text()
            expect(announced(widget)).to_contain_text(said)
            # issue 31: one sentence a learner reads in one breath (the numbers are the readout's)
            assert len(said.split()) <= ONE_BREATH, said

        press_every_control(widget, lambda selector, turn, widget=widget: operate(page, widget, selector, turn),
                            spoken)


def test_the_panels_open_and_close_from_the_keyboard(page: Page) -> None:
    page.goto(DIVES[0])
    wait_until_live(page)
    widget = region(page, on_dive(DIVES[0])[0])
    for fold in ("details.raw-keys", "details.effects-box"):
        summary = widget.locator(f"{fold} > summary")
        tab_to(page, widget, summary)
        page.keyboard.press("Enter")
        expect(widget.locator(fold)).to_have_attribute("open", "")
        page.keyboard.press(" ")
        expect(widget.locator(fold)).not_to_have_attribute("open", "")
