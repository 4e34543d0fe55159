"""What the dive 03 browser tests share: the page's own queues, as Valkey names them.

A page never shows its sandbox id; the test reads it from the page's signed
cookie (`Site.sandbox_of`, tests/e2e/conftest.py), so it can read the very
keys the page shows straight from Valkey.
"""

from __future__ import annotations

from playwright.sync_api import Page

from tests.e2e.conftest import Site


def queue(site: Site, page: Page, part: str) -> str:
    """A queue of the page's sandbox, as Valkey names it: `<sandbox>.<part>`."""
    return f"{site.sandbox_of(page.context)}.{part}"
