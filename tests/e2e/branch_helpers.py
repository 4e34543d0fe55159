"""Helpers of the branch tests: open a widget, name its queues in Valkey, build keys.

A page names keys without the sandbox id; Valkey names them with it. The
sandbox comes from the page's signed cookie (`site.sandbox_of`), the queue's
part from the widget's own `queue_parts`.
"""

from __future__ import annotations

from playwright.sync_api import Locator, Page

from tests.e2e.conftest import Site
from tests.e2e.pages import WIDGETS, region, settled_after, wait_until_live


def open_widget(page: Page, widget: str, hash_: str = "") -> Locator:
    page.goto(WIDGETS[widget].dive + hash_)
    wait_until_live(page)
    return region(page, widget)


def queue_of(site: Site, page: Page, widget: str, n: int = 0) -> str:
    """The widget's n-th queue in this page's sandbox, as Valkey names it: `<sandbox>.<part>`."""
    return f"{site.sandbox_of(page.context)}.{WIDGETS[widget].widget.queue_parts[n]}"


def press(widget: Locator, name: str) -> None:
    """Press the button labelled `name` and wait for the widget's answer."""
    before = widget.get_attribute("data-ver")
    widget.get_by_role("button", name=name, exact=True).click()
    settled_after(widget, before)


def outcome(widget: Locator) -> Locator:
    return widget.locator('[data-role="outcome"]')


def key(queue: str, suffix: str) -> str:
    return f"emq:{{{queue}}}:{suffix}"
