"""The browser modules load and run without a script error: on every dive,
each visible action button is pressed once, and the page reports no
uncaught exception and no console error or warning (a module that imports a
name another no longer exports fails here before any other test sees it)."""

from __future__ import annotations

from playwright.sync_api import BrowserContext

from tests.e2e.pages import DIVES, wait_until_live


def test_every_dive_runs_its_modules_and_every_button_without_a_script_error(context: BrowserContext) -> None:
    errors: list[str] = []
    for dive in DIVES:
        page = context.new_page()
        page.on("pageerror", lambda e, dive=dive: errors.append(f"{dive}: {e}"))
        page.on("console", lambda m, dive=dive: errors.append(f"{dive}: console {m.type}: {m.text}")
                if m.type in ("error", "warning") else None)
        page.goto(dive)
        wait_until_live(page)
        buttons = page.locator(".controls button[data-action]")
        for i in range(buttons.count()):
            button = buttons.nth(i)
            if button.is_visible() and button.is_enabled():
                button.click()
                page.wait_for_timeout(150)
        page.wait_for_timeout(500)
        page.close()
    assert errors == []
