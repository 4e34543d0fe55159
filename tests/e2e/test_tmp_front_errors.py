from playwright.sync_api import BrowserContext
from tests.e2e.pages import DIVES, wait_until_live


def test_no_script_error(context: BrowserContext) -> None:
    errors = []
    for dive in DIVES:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"{dive}: {e}"))
        page.on("console", lambda m: errors.append(f"{dive}: console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.goto(dive)
        wait_until_live(page)
        buttons = page.locator(".controls button[data-action]")
        for i in range(buttons.count()):
            b = buttons.nth(i)
            if b.is_visible() and b.is_enabled():
                b.click()
                page.wait_for_timeout(150)
        page.wait_for_timeout(500)
        page.close()
    assert errors == []
