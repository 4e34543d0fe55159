"""End-to-end fixtures: a real valkey-server, the real site under uvicorn, Chromium.

These tests run in their own pytest process (`make test` runs them second):
Playwright's sync API and the asyncio tests do not share one event loop well.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.support import INSTRUCTOR_TOKEN, Site, own_site

CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")

# How long an expectation waits for the page to show what Valkey holds. The
# suite shares two cores with the site, Valkey and Chromium; under that load a
# stream's repaint can take longer than Playwright's 5 s default. It is a
# bound for an outcome, never a speed: the benches measure speed.
expect.set_options(timeout=10_000)
__all__ = ["INSTRUCTOR_TOKEN", "Site"]


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    with own_site() as running:
        yield running


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: `make test` installs Debian's chromium")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update", "--no-first-run"],
        )
        yield browser
        browser.close()


@pytest.fixture
def context(browser: Browser, site: Site) -> Iterator[BrowserContext]:
    ctx = browser.new_context(base_url=site.url)
    ctx.set_default_timeout(10_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


@pytest.fixture
def contexts(browser: Browser, site: Site) -> Iterator[Callable[..., BrowserContext]]:
    """Makes a fresh browser context (a person of their own), closed at the end."""
    made: list[BrowserContext] = []

    def make(**options: object) -> BrowserContext:
        ctx = browser.new_context(base_url=site.url, **options)  # type: ignore[arg-type]
        ctx.set_default_timeout(10_000)
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.close()
