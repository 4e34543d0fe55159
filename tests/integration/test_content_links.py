"""The whole course served by the real app (real partials, /room and
/instructor included) on the test Valkey: every page is reachable from the
index and no internal link is dead. The pages' markup is checked without
Valkey in tests/unit/content/test_content_site.py."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from server.exercises import catalogue
from tests.unit.content.test_content_site import ALL_PAGES, Doc


@pytest.fixture
def site_client(valkey, tmp_path):
    """The real app (real partials, /room and /instructor included) on the test Valkey,
    its data (the cookie secret) in a folder of the test's, never the repository's."""
    from server.app import create_app
    from server.settings import Settings

    with TestClient(create_app(valkey.url, Settings(data_dir=str(tmp_path)), cluster=False)) as test_client:
        yield test_client


def test_every_page_is_reachable_from_the_index_and_no_internal_link_is_dead(site_client):
    client = site_client
    seen: dict[str, Doc] = {}
    queue = ["/"]
    fragments: list[tuple[str, str, str]] = []
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        response = client.get(path)
        assert response.status_code == 200, path
        doc = Doc(response.text)
        seen[path] = doc
        for a in doc.all("a"):
            href = a.get("href") or ""
            if href.startswith(("http://", "https://")):
                continue
            assert href.startswith(("/", "#")) and not href.startswith("//"), (path, href)
            target, _, fragment = href.partition("#")
            target = target or path
            if fragment:
                fragments.append((path, target, fragment))
            if target not in seen:
                queue.append(target)
    # every page of the course, plus the app's own pages the footer links to, and each
    # exercise's own page (its kept script and best run, for a reader without JavaScript)
    exercises = {f"/exercises/{name}" for name in catalogue.names()}
    assert set(seen) == ALL_PAGES | {"/room", "/progress"} | exercises
    for source, target, fragment in fragments:
        # a deep link (#<widget>-step=N) opens a widget of that page at a step of its tour
        step = re.fullmatch(r"(?P<widget>[a-z-]+)-step=\d+", fragment)
        if step:
            widgets = {a.get("data-widget") for t, a in seen[target].tags}
            assert step["widget"] in widgets, f"{source} links to {target}#{fragment}"
            continue
        assert fragment in seen[target].ids, f"{source} links to {target}#{fragment}"
