"""Helpers of the branch tests: open a widget, name its queues, build keys."""

from __future__ import annotations

from playwright.sync_api import Locator, Page

from tests.e2e.pages import WIDGETS, region, wait_until_live


def open_widget(page: Page, widget: str, hash_: str = "") -> Locator:
    page.goto(WIDGETS[widget][0] + hash_)
    wait_until_live(page)
    return region(page, widget)


def queue_of(page: Page, widget: str, n: int = 0) -> str:
    """The widget's n-th queue in this page's sandbox, as the server names it."""
    snap = page.request.get(f"/api/widgets/{widget}/state").json()["snapshot"]
    return str(snap["queues"][n]["queue"])


def press(widget: Locator, name: str) -> None:
    widget.get_by_role("button", name=name, exact=True).click()


def outcome(widget: Locator) -> Locator:
    return widget.locator('[data-role="outcome"]')


def key(queue: str, suffix: str) -> str:
    return f"emq:{{{queue}}}:{suffix}"
