"""Navigation: every page is reached from `/` by links alone, and the dives
read in the course's own order, numbered 01, 02, … across the hubs, with
Next and Previous leading through them both ways (the pages and their
order come from the course the site loads)."""

from __future__ import annotations

from urllib.parse import urldefrag, urlparse

from playwright.sync_api import Page, expect

from tests.e2e.pages import COURSE, DIVES, HUBS, INDEX, THE_COURSE


def crawl(page: Page, start: str = "/") -> dict[str, int]:
    """path -> HTTP status, for every same-site page reachable by <a href> from `start`."""
    seen: dict[str, int] = {}
    queue = [start]
    while queue:
        path = queue.pop(0)
        if path in seen:
            continue
        response = page.goto(path, wait_until="domcontentloaded")
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
    broken = {p: s for p, s in reached.items() if s != 200}
    assert not broken, broken


def follow(page: Page, rel: str) -> str | None:
    """Click the pager's Next or Previous link; the path it led to (None: there is none)."""
    link = page.locator(f'.pager a[rel="{rel}"]')
    if link.count() == 0:
        return None
    link.click()
    page.wait_for_load_state("domcontentloaded")
    return urlparse(page.url).path


def test_next_leads_through_every_dive_in_order_and_previous_leads_back(page: Page) -> None:
    page.goto(DIVES[0], wait_until="domcontentloaded")
    forward = [DIVES[0]]
    while (path := follow(page, "next")) is not None:
        forward.append(path)
    assert forward == list(DIVES)
    backward = [DIVES[-1]]
    while (path := follow(page, "prev")) is not None:
        backward.append(path)
    assert backward == list(reversed(DIVES))


def test_dives_are_numbered_01_onwards_in_course_order_across_the_hubs(page: Page) -> None:
    for number, dive in enumerate(THE_COURSE.dives, 1):
        page.goto(dive.path, wait_until="domcontentloaded")
        hub = dive.hub.title if dive.hub else ""
        expect(page.locator(".page-kicker")).to_have_text(f"{hub} · dive {number:02d}")
        # the dive links its hub and the index
        hrefs = set(page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.getAttribute('href'))"))
        assert {INDEX, dive.hub.path if dive.hub else ""} <= hrefs, dive.path


def test_a_hub_lists_its_dives_in_order(page: Page) -> None:
    for hub in THE_COURSE.hubs:
        page.goto(hub.path, wait_until="domcontentloaded")
        listed = page.eval_on_selector_all(
            ".dive-list a[href]", "(links) => links.map((a) => a.getAttribute('href'))")
        ours = [href for href in listed if href in DIVES]
        assert list(dict.fromkeys(ours)) == [d.path for d in hub.dives], hub.path


def test_the_404_page_links_back_into_the_course(page: Page) -> None:
    response = page.goto(DIVES[0] + "-no-such-dive")
    assert response is not None and response.status == 404
    hrefs = set(page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.getAttribute('href'))"))
    assert {INDEX, *HUBS} <= hrefs
