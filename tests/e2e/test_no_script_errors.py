"""The browser modules load and run without a script error: on every dive,
every control of every widget is pressed (each press waits for the widget's
answer, never a fixed time), and the page reports no uncaught exception and
no console error or warning (a module that imports a name another no longer
exports fails here before any other test sees it)."""

from __future__ import annotations

import pytest
from playwright.sync_api import BrowserContext

from tests.e2e.pages import DIVES, click, on_dive, press_every_control, region, wait_until_live


@pytest.mark.parametrize("dive", DIVES)
def test_pressing_every_control_of_a_dive_raises_no_script_error(context: BrowserContext, dive: str) -> None:
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.goto(dive)
    wait_until_live(page)
    for name in on_dive(dive):
        widget = region(page, name)
        press_every_control(widget, lambda selector, _, widget=widget: click(widget, selector))
    # the stream's last frames reach the page before it is judged
    page.evaluate("() => new Promise((done) => setTimeout(done, 0))")
    assert errors == []
