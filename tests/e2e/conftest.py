"""End-to-end fixtures: a real valkey-server, the real site under uvicorn, Chromium.

These tests run in their own pytest process (`make test` runs them second):
Playwright's sync API and the asyncio tests do not share one event loop well.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

from server.valkey_process import ValkeyProcess, free_port

CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")
INSTRUCTOR_TOKEN = "e2e-instructor-token"


@dataclass
class Site:
    url: str
    valkey: ValkeyProcess
    proc: subprocess.Popen[bytes]

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.valkey.url, decode_responses=True)


def start_site(valkey_url: str, extra_env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    env = {
        **os.environ,
        "EMQLAB_VALKEY_URL": valkey_url,
        "EMQLAB_INSTRUCTOR_TOKEN": INSTRUCTOR_TOKEN,
        "EMQLAB_RATE_LIMIT": "100000",
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "server.cli:app_from_env", "--factory",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the site exited early with {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/", timeout=1) as response:
                if response.status == 200:
                    return url, proc
        except OSError:
            time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("the site did not answer within 20 s")


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    with ValkeyProcess() as valkey:
        url, proc = start_site(valkey.url)
        try:
            yield Site(url, valkey, proc)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


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
