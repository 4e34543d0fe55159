"""What the e2e suite knows of the course: its pages and where each widget lives."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect

INDEX, HUBS = "/", ("/flows", "/batches")
DIVES = (
    "/flows/parent-and-children",
    "/flows/reading-the-results",
    "/flows/cross-queue",
    "/batches/bulk-flows",
)
COURSE = (INDEX, *HUBS, *DIVES)
# widget -> (its dive, the words its region's name contains)
WIDGETS = {
    "enqueue-stepper": ("/flows/parent-and-children", "@enqueue_flow"),
    "fanin": ("/flows/parent-and-children", "fan-in"),
    "native": ("/flows/parent-and-children", "native"),
    "results": ("/flows/reading-the-results", "results"),
    "outbox": ("/flows/cross-queue", "outbox"),
    "failure-policy": ("/flows/cross-queue", "failure policy"),
    "ledger": ("/batches/bulk-flows", "ledger"),
    "tree": ("/flows/cross-queue", "tree"),
}


def region(page: Page, widget: str) -> Locator:
    return page.get_by_role("region", name=re.compile(re.escape(WIDGETS[widget][1])))


def wait_until_live(page: Page) -> None:
    """Every widget on the page has drawn the keys Valkey returned."""
    widgets = page.locator("[data-widget]")
    for i in range(widgets.count()):
        widget = widgets.nth(i)
        expect(widget).to_have_class(re.compile(r"\bis-live\b"))
        expect(widget.locator('[data-role="readout"]')).not_to_have_text(re.compile(r"^(Reading the keys)?$"))
