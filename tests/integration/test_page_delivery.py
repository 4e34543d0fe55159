"""How pages travel: compressed when the browser asks, the stream never held back by
compression, and every course page with a description of its own (search results, Lighthouse's SEO)."""

from __future__ import annotations

import re

import httpx

from tests.support import DIVE, LiveSite

COURSE_PAGES = ["/", "/flows", "/batches", DIVE, "/flows/reading-the-results", "/flows/cross-queue",
                "/batches/bulk-flows"]


def test_a_page_goes_gzip_compressed_to_a_browser_that_asks_and_plain_to_one_that_does_not(site: LiveSite) -> None:
    with site.client() as client:
        client.get(DIVE)  # the first visit sets the cookie; the next lands the widgets: after that,
        client.get(DIVE)  # the page is the same drawing however it travels
        packed = client.get(DIVE, headers={"Accept-Encoding": "gzip"})
        plain = client.get(DIVE, headers={"Accept-Encoding": "identity"})
    assert packed.status_code == plain.status_code == 200
    assert packed.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert packed.text == plain.text  # httpx inflated it: the same page


def test_the_stream_is_never_compressed_so_no_frame_waits_in_a_buffer(site: LiveSite) -> None:
    client = site.visitor()
    with client.stream(
            "GET", "/api/stream?widgets=fanin", headers={"Accept-Encoding": "gzip", "Referer": site.url + DIVE},
            timeout=httpx.Timeout(10, read=10)) as response:
        assert response.status_code == 200
        assert "content-encoding" not in response.headers
        assert response.headers["content-type"].startswith("text/event-stream")
    client.close()


def test_every_course_page_has_its_own_meta_description(site: LiveSite) -> None:
    seen = set()
    with site.client() as client:
        for path in COURSE_PAGES:
            found = re.search(r'<meta name="description" content="([^"]+)">', client.get(path).text)
            assert found and len(found[1]) > 40 and "`" not in found[1], path
            seen.add(found[1])
    assert len(seen) == len(COURSE_PAGES)
