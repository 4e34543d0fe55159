"""End-to-end fixtures: a real valkey-server, the real site under uvicorn, Chromium.

These tests run in their own pytest process (`make test` runs them second):
Playwright's sync API and the asyncio tests do not share one event loop well.

A page shows keys without its sandbox id, and the cookie that names the
sandbox is signed, so a test learns a page's sandbox the way the site does:
`site.sandbox_of(context)` reads the site's cookie secret from the site's
data directory and decodes the browser context's `emqlab_sandbox` cookie.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from server.sandboxes.sandbox import COOKIE, SandboxCookie
from server.valkey.datadir import SECRET
from server.valkey.process import ValkeyProcess
from tests import support
from tests.support import INSTRUCTOR_TOKEN, start_site, stop_site

# Debian's headless shell: the same Chromium build without the browser's own UI layer, as
# Playwright uses for headless runs. Chromium is 85% of this suite's CPU; the shell costs about
# a quarter less per page load and a quarter per new context (measured on this machine).
CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium-headless-shell")

# How long an expectation waits for the page to show what Valkey holds. The
# suite shares two cores with the site, Valkey and Chromium; under that load a
# stream's repaint can take longer than Playwright's 5 s default. It is a
# bound for an outcome, never a speed: the benches measure speed.
expect.set_options(timeout=10_000)
__all__ = ["INSTRUCTOR_TOKEN", "Site"]


@dataclass
class Site(support.Site):
    """The running site, its Valkey, and the data directory it keeps its secret in."""

    data_dir: Path = Path()

    def secret(self) -> str:
        return (self.data_dir / SECRET).read_text(encoding="utf-8").strip()

    def sandbox_of(self, context: BrowserContext) -> str:
        """The sandbox a browser context acts in, from its signed cookie (it has opened a page)."""
        raw = next((c["value"] for c in context.cookies(self.url) if c["name"] == COOKIE), None)
        assert raw is not None, "the context holds no sandbox cookie: open a page of the site first"
        return SandboxCookie(self.secret()).parse(raw)

    def keys_of(self, sandbox: str, part: str) -> dict[str, str]:
        """Every key of the queue `<sandbox>.<part>` in Valkey, as a page names it (no sandbox id) -> its type."""
        r = self.redis()
        found = r.scan_iter(match=f"emq:{{{sandbox}.{part}}}:*", count=1000)
        return {name.replace(f"{{{sandbox}.", "{", 1): r.type(name) for name in found}


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    data_dir = tmp_path_factory.mktemp("site-data")
    with ValkeyProcess() as valkey:
        url, proc = start_site(valkey.url, {"EMQLAB_DATA_DIR": str(data_dir)})
        try:
            yield Site(url, valkey, proc, data_dir)
        finally:
            stop_site(proc)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: `make test` installs Debian's chromium-headless-shell")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update", "--no-first-run",
                  # every page asks for less motion, which the site honours (no smooth scroll, no
                  # fade of a change): the same DOM, and no animation frames drawn between presses
                  "--force-prefers-reduced-motion"],
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
        # base_url may name another site (a second one on the same Valkey and secret)
        ctx = browser.new_context(**{"base_url": site.url, **options})  # type: ignore[arg-type]
        ctx.set_default_timeout(10_000)
        made.append(ctx)
        return ctx

    yield make
    for ctx in made:
        ctx.close()
