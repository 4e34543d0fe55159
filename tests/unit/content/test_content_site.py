"""The real course, served by server.web.views.pages through the real templates.

A small Starlette app stands in for server/app.py: it sets the three
app services views_pages expects and mounts its routes.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.templating import Jinja2Templates
from starlette.testclient import TestClient

from server.app import PLACEABLE
from server.content import Course
from server.emq import registry
from server.sandboxes.sandbox import SignedCookie
from server.web.templating import CachedStatic, static_url
from server.web.views import pages as views_pages
from server.widgets import WIDGETS as FOUND
from server.widgets.snapshot import Catalog
from tests import services_stub

ROOT = Path(__file__).resolve().parents[3]
# what a dive may place: every widget the code has, the console and the exercises (server/app.py)
WIDGETS = {*FOUND, *PLACEABLE}
ALL_PAGES = {
    "/",
    "/flows",
    "/batches",
    "/flows/parent-and-children",
    "/flows/reading-the-results",
    "/flows/cross-queue",
    "/batches/bulk-flows",
    "/flows/under-fire",
}


class Doc(HTMLParser):
    """Collects what the tests look at: tags with attributes, ids, text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ids: set[str] = set()
        self.text_parts: list[str] = []
        self.inline_scripts = 0
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if tag == "script":
            self._in_script = True
            if not attributes.get("src"):
                self.inline_scripts += 1

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        self.text_parts.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.text_parts).split())

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag]


def _fake_widget(calls):
    def render_widget(name, options):
        calls.append(name)
        return (
            f'<section class="widget" aria-label="{name} widget" data-widget="{name}">'
            f"<p>{name} partial</p></section>"
        )

    return render_widget


@pytest.fixture(scope="module")
def course() -> Course:
    return Course.load(known_widgets=WIDGETS)


@pytest.fixture
def widget_calls():
    return []


@pytest.fixture
def client(course, widget_calls):
    app = Starlette(
        routes=[
            Mount("/static", CachedStatic(directory=ROOT / "site" / "static"), name="static"),
            *views_pages.routes(),
        ],
        exception_handlers={404: views_pages.not_found},
    )
    templates = Jinja2Templates(directory=str(ROOT / "site" / "templates"))
    templates.env.globals["static_url"] = static_url(ROOT / "site" / "static")  # as server/app.py
    services_stub.on(app, course=course, templates=templates,
                     render_widget=_fake_widget(widget_calls), catalog=Catalog(dict(FOUND)),
                     cookies=services_stub.cookies(room=SignedCookie("emqlab_room", "unit-secret", "emqlab-room", 60)))
    with TestClient(app) as test_client:
        yield test_client


def test_every_content_file_loads_as_a_page(course):
    files = sorted((ROOT / "site" / "content").rglob("*.md"))
    assert len(files) == len(course.pages) == len(ALL_PAGES)
    assert set(course.pages) == ALL_PAGES


def test_widgets_named_in_the_content_are_exactly_the_known_widgets_and_a_console_on_every_dive(course):
    assert {placement.name for _, placement in course.placements()} == WIDGETS
    for dive in course.dives:  # every dive: its widgets first, its console last
        assert dive.widgets[-1] == "console" and set(dive.widgets[:-1]) & set(FOUND), dive.path


def test_pages_carry_no_inline_script_style_or_handlers(client):
    for path in ALL_PAGES | {"/missing-page"}:
        text = client.get(path).text
        doc = Doc(text)
        assert doc.inline_scripts == 0, path
        for tag, attrs in doc.tags:
            assert tag != "style", path
            assert "style" not in attrs, (path, tag)
            assert not any(name.startswith("on") for name in attrs), (path, tag)


def test_each_page_has_one_h1_one_main_a_skip_link_and_the_stylesheets(client):
    for path in ALL_PAGES:
        doc = Doc(client.get(path).text)
        assert len(doc.all("h1")) == 1, path
        assert len(doc.all("main")) == 1, path
        assert doc.all("a")[0].get("href") == "#main", path
        hrefs = [(link.get("href") or "").split("?v=")[0] for link in doc.all("link")]
        assert "/static/site.css" in hrefs and "/static/widgets.css" in hrefs


def test_dive_page_has_the_full_anatomy(client):
    doc = Doc(client.get("/flows/parent-and-children").text)
    text = doc.text
    assert "Flows · dive 01" in text
    assert "Parent and children" in text
    nav = [a.get("href") for a in doc.all("a")]
    for fragment in ("#the-atomic-add", "#the-fan-in", "#the-native-refusal",
                     "#pattern-and-implementation", "#recap", "#references"):
        assert fragment in nav
    assert {"the-atomic-add", "the-fan-in", "the-native-refusal"} <= doc.ids
    for words in ("Pattern & implementation", "The pattern", "The implementation", "Recap",
                  "Sources", "Related in this course", "EMQSTATE complete flow not native",
                  "EMQSTATE fail flow not native"):
        assert words in text
    assert text.index("Sources") < text.index("Related in this course")
    assert "/flows/reading-the-results" in nav
    assert "https://valkey.io/commands/set/" in nav
    assert "https://valkey.io/commands/evalsha/" in nav


def test_every_related_entry_of_a_dive_is_a_link_to_a_page_of_this_course(course):
    # a page the learner cannot open is no reference: the dives name only pages of Flows Lab
    for dive in course.dives:
        assert dive.related, dive.path
        for entry in dive.related:
            assert entry.href and not entry.external and course.page(entry.href) is not None, (dive.path, entry.title)


def test_dive_scripts_block_loads_the_one_swap_for_every_widget_and_what_is_no_widget(client):
    doc = Doc(client.get("/flows/cross-queue").text)
    scripts = [(s.get("type"), s.get("src")) for s in doc.all("script")]
    # lab.js morphs in every widget's frames; the console and the exercises drive themselves
    assert scripts == [
        ("module", "/static/widgets/console.js"),
        ("module", "/static/widgets/exercise.js"),
        ("module", "/static/widgets/lab.js"),
    ]
    assert Doc(client.get("/").text).all("script") == []


def test_widgets_are_rendered_by_the_app_into_their_sections_aside(client):
    page = client.get("/flows/parent-and-children").text
    chunks = page.split('<section class="dive-section')
    by_id = {re.search(r'id="([^"]+)"', c).group(1): c for c in chunks[1:]}
    for section, widget in (("the-atomic-add", "enqueue-stepper"), ("the-fan-in", "fanin"),
                            ("the-native-refusal", "native")):
        prose, _, aside = by_id[section].partition('<aside class="dive-aside">')
        assert f'data-widget="{widget}"' in aside
        assert "data-widget=" not in prose


def test_page_bodies_are_rendered_once_and_cached(client, widget_calls):
    client.get("/flows/parent-and-children")
    client.get("/flows/parent-and-children")
    client.get("/flows/cross-queue")
    placed = [p.name for path in ("/flows/parent-and-children", "/flows/cross-queue")
              for p in client.app.state.services.course.page(path).placements]
    assert widget_calls == placed  # each placement rendered once, then served from the cache


def test_listings_show_the_script_file_the_server_runs(client):
    page = client.get("/flows/cross-queue").text
    for name in ("hold_parent", "enqueue_flow_child", "flow_deliver", "fail"):
        assert f'<figure class="listing" data-script="{name}">' in page
        source = registry.script_source(name)  # the file with its includes expanded
        for number, line in enumerate(source.splitlines(), start=1):
            assert f'data-line="{number}"' in page
            assert html.escape(line, quote=True).replace("&#x27;", "'") in page or not line


def test_stepper_listing_tags_lines_with_their_moves(client):
    page = client.get("/flows/parent-and-children").text
    assert 'data-script="enqueue_flow"' in page
    assert re.search(r'<span class="line" data-line="\d+" data-move="2">', page)


def test_hub_lists_its_dives_in_order_with_ledes(client):
    doc = Doc(client.get("/flows").text)
    dive_links = [a.get("href") for a in doc.all("a") if (a.get("href") or "").startswith("/flows/")]
    assert dive_links == [
        "/flows/parent-and-children",
        "/flows/reading-the-results",
        "/flows/cross-queue",
        "/flows/under-fire",
    ]
    assert "Flows · dive 02" in doc.text


def test_batches_hub_links_its_dive_and_the_flows_dives_it_builds_on(client):
    doc = Doc(client.get("/batches").text)
    hrefs = {a.get("href") for a in doc.all("a")}
    assert {"/batches/bulk-flows", "/flows/parent-and-children", "/flows/cross-queue"} <= hrefs
    assert "Batches · dive 04" in doc.text
    assert "(not in Flows Lab)" not in doc.text


def test_index_lists_every_hub_and_every_dive(client, course):
    hrefs = {a.get("href") for a in Doc(client.get("/").text).all("a")}
    assert {h.path for h in course.hubs} <= hrefs
    assert {d.path for d in course.dives} <= hrefs


def test_unknown_paths_get_the_friendly_404_page(client):
    for path in ("/nowhere", "/flows/nowhere", "/flows/parent-and-children/extra", "/flows/index"):
        response = client.get(path)
        assert response.status_code == 404, path
        doc = Doc(response.text)
        assert "This page is not in Flows Lab" in doc.text
        assert "/" in [a.get("href") for a in doc.all("a")]


def test_api_paths_get_a_json_404(client):
    response = client.get("/api/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"error": "Not Found"}


def test_current_hub_is_marked_in_the_header(client):
    doc = Doc(client.get("/flows/cross-queue").text)
    current = [a for a in doc.all("a") if a.get("aria-current")]
    assert [(a.get("href"), a.get("aria-current")) for a in current] == [("/flows", "true")]


def test_favicon_ico_is_the_sites_svg_icon_never_a_404(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text.startswith("<svg")
    assert '<link rel="icon" href="/static/favicon.svg?v=' in client.get("/").text


def test_a_stylesheet_url_names_its_content_and_is_kept_a_year_while_a_module_revalidates(client):
    import hashlib
    from pathlib import Path

    href = next(link.get("href") for link in Doc(client.get("/").text).all("link")
                if (link.get("href") or "").startswith("/static/site.css"))
    css = (Path(__file__).resolve().parents[3] / "site" / "static" / "site.css").read_bytes()
    assert href == f"/static/site.css?v={hashlib.sha256(css).hexdigest()[:12]}"
    kept = client.get(href)
    assert kept.status_code == 200 and kept.headers["cache-control"] == "public, max-age=31536000, immutable"
    module = client.get("/static/widgets/dom.js")  # imported as "./dom.js": no hash to change, so asked again
    assert module.status_code == 200 and module.headers["cache-control"] == "no-cache"
    again = client.get("/static/widgets/dom.js", headers={"If-None-Match": module.headers["etag"]})
    assert again.status_code == 304


def test_index_key_table_names_the_poison_list_the_head_counter_and_the_metric(client):
    doc = Doc(client.get("/").text)
    for key in ("emq:{q}:flow:outbox:poison", "emq:{q}:flow:outbox:head", "emq:{q}:metrics:completed"):
        assert key in doc.text
    assert "only the widgets need" not in doc.text


def test_bulk_flows_ends_in_a_page_of_the_course_not_a_dead_end(client):
    doc = Doc(client.get("/batches/bulk-flows").text)
    next_links = [a.get("href") for a in doc.all("a") if a.get("href") == "/flows/cross-queue"]
    assert next_links
    hub = Doc(client.get("/batches").text)
    assert {"/flows/parent-and-children", "/flows/cross-queue"} <= {a.get("href") for a in hub.all("a")}


def test_host_plumbing_is_folded_while_the_scripts_the_widgets_run_stay_in_view(client):
    page = client.get("/flows/parent-and-children").text
    folds = re.findall(r'<details class="listing-fold"><summary>(.*?)</summary>\n<figure class="listing[^"]*"'
                       r'(?: data-host="([^"]+)")?', page)
    folded = {where for _, where in folds}
    assert {"server/emq/flows.py::_path", "server/emq/flows.py::_same_queue_call",
            "server/emq/errors.py::translate", "server/emq/jobs.py::complete_call"} <= folded
    assert all(summary for summary, _ in folds)
    for script in ("enqueue_flow", "complete", "requeue_lapsed"):
        at = page.index(f'<figure class="listing" data-script="{script}">')
        before = page[:at]
        assert before.count("<details") == before.count("</details>"), f"{script}.lua is folded"
    assert 'class="language-python"' in page
    assert "EMQ.COMPLETE 5 emq:{q}:active" in html.unescape(page)
