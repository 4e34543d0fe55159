"""Every page of the course is reachable from `/` by following links alone."""

from __future__ import annotations

from urllib.parse import urldefrag, urlparse

from playwright.sync_api import Page

from tests.e2e.pages import COURSE


def crawl(page: Page, start: str = "/") -> dict[str, int]:
    """path -> HTTP status, for every same-site page reachable by <a href> from `start`."""
    seen: dict[str, int] = {}
    queue = [start]
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        response = page.goto(path)
        seen[path] = response.status if response else 0
        if seen[path] != 200:
            continue
        for href in page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.href)"):
            url = urlparse(urldefrag(href)[0])
            if url.netloc != urlparse(page.url).netloc or url.path.startswith(("/static/", "/api/")):
                continue
            if url.path not in seen:
                queue.append(url.path)
    return seen


def test_every_page_of_the_course_is_reached_from_the_index_by_links(page: Page) -> None:
    reached = crawl(page)
    missing = [p for p in COURSE if p not in reached]
    assert not missing, f"not reachable from / by links: {missing}"
    broken = {p: s for p, s in reached.items() if p in COURSE and s != 200}
    assert not broken, broken


def test_every_dive_links_to_its_hub_and_the_pages_beside_it(page: Page) -> None:
    for path in COURSE[3:]:
        page.goto(path)
        hrefs = set(page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.getAttribute('href'))"))
        assert "/" in hrefs, path
        assert any(h in hrefs for h in ("/flows", "/batches")), path
        assert len(hrefs & set(COURSE[3:]) - {path}) >= 1, path


def test_the_404_page_links_back_into_the_course(page: Page) -> None:
    response = page.goto("/flows/no-such-dive")
    assert response is not None and response.status == 404
    reached = crawl(page, "/")  # the course is whole from /
    page.goto("/flows/no-such-dive")
    hrefs = set(page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.getAttribute('href'))"))
    assert {"/", "/flows", "/batches"} <= hrefs
    assert all(reached[h] == 200 for h in ("/", "/flows", "/batches"))
