"""Course building: URLs, navigation from front matter, link resolution."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from server.content import ContentError, Course
from server.content.errors import DirectiveError
from server.content.pages import body_links

SCRIPTS = Path(__file__).parent / "fixtures" / "scripts"

DIVE = """\
---
title: {title}
order: {order}
lede: The lede of {title}.
pattern: A pattern.
implementation: An implementation.
recap: A recap.
next:
  page: /alpha
  note: back to the hub.
sources:
  - title: Valkey — SET
    href: https://valkey.io/commands/set/
    note: the counter.
{extra}---

## Only section

Body of {title}.
"""


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _site(root: Path, extra: str = "", body_b: str = "") -> Course:
    _write(root, "index.md", "---\ntitle: Course\nlede: Welcome.\n---\n\nHello.\n")
    _write(root, "alpha/index.md", "---\ntitle: Alpha\norder: 2\nlede: The alpha hub.\n---\n")
    _write(root, "beta/index.md", "---\ntitle: Beta\norder: 1\nlede: The beta hub.\n---\n")
    _write(root, "alpha/second.md", DIVE.format(title="Second", order=2, extra=extra))
    _write(root, "alpha/first.md", DIVE.format(title="First", order=1, extra=""))
    _write(root, "alpha/third.md", DIVE.format(title="Third & last", order=3, extra="") + body_b)
    _write(root, "beta/only.md", DIVE.format(title="Only", order=2, extra=""))
    return Course.load(root, scripts=SCRIPTS)


def test_file_paths_map_to_root_relative_urls(tmp_path):
    course = _site(tmp_path)
    assert sorted(course.pages) == [
        "/", "/alpha", "/alpha/first", "/alpha/second", "/alpha/third", "/beta", "/beta/only",
    ]
    assert course.page("/alpha/first/").path == "/alpha/first"
    assert course.page("/nowhere") is None


def test_hubs_and_dives_are_ordered_by_front_matter(tmp_path):
    course = _site(tmp_path)
    assert [h.path for h in course.hubs] == ["/beta", "/alpha"]
    assert [d.path for d in course.dives] == [
        "/beta/only", "/alpha/first", "/alpha/second", "/alpha/third",
    ]


def test_prev_and_next_run_through_the_whole_course_across_hubs(tmp_path):
    course = _site(tmp_path)
    only = course.page("/beta/only")
    first, second, third = (course.page(f"/alpha/{s}") for s in ("first", "second", "third"))
    assert (only.prev_page, only.next_page) == (None, first)
    assert (first.prev_page, first.next_page) == (only, second)
    assert (second.prev_page, second.next_page) == (first, third)
    assert (third.prev_page, third.next_page) == (second, None)


def test_dive_kicker_names_the_hub_and_the_dives_number_in_the_course(tmp_path):
    course = _site(tmp_path)
    # beta is the first hub (order 1): its only dive is dive 01 whatever its order in the hub
    assert [(d.path, d.number, d.kicker) for d in course.dives] == [
        ("/beta/only", 1, "Beta · dive 01"),
        ("/alpha/first", 2, "Alpha · dive 02"),
        ("/alpha/second", 3, "Alpha · dive 03"),
        ("/alpha/third", 4, "Alpha · dive 04"),
    ]
    assert course.index.number == 0 and course.page("/alpha").number == 0


def test_related_entries_link_only_to_pages_that_exist(tmp_path):
    extra = """\
related:
  - page: /alpha/first
    note: by path.
  - title: third and last
    note: by title, matched loosely.
  - title: A page we do not have
    note: shown as plain text.
  - title: Elsewhere
    href: https://example.org/
    note: external.
"""
    course = _site(tmp_path, extra=extra)
    related = course.page("/alpha/second").related
    assert [(r.title, r.href, r.external) for r in related] == [
        ("First", "/alpha/first", False),
        ("third and last", "/alpha/third", False),
        ("A page we do not have", None, False),
        ("Elsewhere", "https://example.org/", True),
    ]


def test_a_related_path_that_is_not_a_page_fails_to_load(tmp_path):
    extra = "related:\n  - page: /alpha/missing\n    note: typo.\n"
    with pytest.raises(ContentError, match="not a page of the course"):
        _site(tmp_path, extra=extra)


def test_a_dead_internal_link_in_a_body_fails_to_load(tmp_path):
    with pytest.raises(ContentError, match="no such page"):
        _site(tmp_path, body_b="\nSee [gone](/alpha/gone).\n")


def test_a_link_to_a_missing_section_fails_to_load(tmp_path):
    with pytest.raises(ContentError, match="no id 'nope'"):
        _site(tmp_path, body_b="\nSee [there](/alpha/first#nope).\n")


def test_a_relative_link_fails_to_load(tmp_path):
    with pytest.raises(ContentError, match="root-relative"):
        _site(tmp_path, body_b="\nSee [there](first).\n")


def test_links_to_existing_pages_and_sections_load(tmp_path):
    course = _site(tmp_path, body_b="\nSee [one](/alpha/first#only-section) and [top](#recap).\n")
    assert [href for href, _ in body_links(course.page("/alpha/third").tokens)] == [
        "/alpha/first#only-section", "#recap"]


def test_front_matter_is_checked_per_kind(tmp_path):
    _site(tmp_path)
    (tmp_path / "alpha/first.md").write_text("---\ntitle: X\nlede: Y\n---\n")
    with pytest.raises(ContentError, match="lacks"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_unknown_front_matter_field_is_an_error(tmp_path):
    with pytest.raises(ContentError, match="unknown fields"):
        _site(tmp_path, extra="colour: blue\n")


def test_an_h1_in_a_body_is_an_error(tmp_path):
    with pytest.raises(ContentError, match="use '## ' headings"):
        _site(tmp_path, body_b="\n# Another title\n")


def test_a_dive_without_a_hub_is_an_error(tmp_path):
    _site(tmp_path)
    _write(tmp_path, "gamma/orphan.md", DIVE.format(title="Orphan", order=1, extra=""))
    with pytest.raises(ContentError, match="has no hub"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_two_dives_with_one_order_is_an_error(tmp_path):
    _site(tmp_path)
    _write(tmp_path, "alpha/fourth.md", DIVE.format(title="Fourth", order=3, extra=""))
    with pytest.raises(ContentError, match="share one order"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_page_exposes_sections_widgets_and_inline_fields(tmp_path):
    _site(tmp_path)
    _write(
        tmp_path,
        "alpha/first.md",
        DIVE.format(title="First", order=1, extra="")
        + "\n## Second part\n\n```{widget} fanin\n```\n\n```{widget} ledger\n```\n\n"
        "```{widget} fanin\n```\n",
    )
    page = Course.load(tmp_path, scripts=SCRIPTS).page("/alpha/first")
    assert [(s.id, s.title, s.href) for s in page.sections] == [
        ("only-section", "Only section", "#only-section"),
        ("second-part", "Second part", "#second-part"),
    ]
    assert page.widgets == ["fanin", "ledger"]
    assert str(page.lede_html) == "The lede of First."
    assert page.meta["pattern"] == "A pattern."
    assert 'data-widget="ledger"' in page.render_body()


def test_inline_front_matter_fields_escape_raw_html(tmp_path):
    _site(tmp_path)
    text = (tmp_path / "alpha/first.md").read_text().replace(
        "lede: The lede of First.", "lede: Hi <script>x()</script> `code`"
    )
    (tmp_path / "alpha/first.md").write_text(text)
    page = Course.load(tmp_path, scripts=SCRIPTS).page("/alpha/first")
    assert str(page.lede_html) == "Hi &lt;script&gt;x()&lt;/script&gt; <code>code</code>"


QUESTIONED = """
## Try it

```{widget} fanin
questions:
  - id: deps
    action: complete-child
    legend: "Predict: what will :dependencies be?"
    reading: dependencies
    when: children-outstanding
    answer: number
    says: ":dependencies = {value}"
```
"""


def test_placements_yield_every_widget_fence_with_its_page_in_course_order(tmp_path):
    _site(tmp_path)
    _write(tmp_path, "alpha/second.md", DIVE.format(title="Second", order=2, extra="") + QUESTIONED)
    _write(tmp_path, "beta/only.md", DIVE.format(title="Only", order=2, extra="")
           + "\n## Console\n\n```{widget} console\ntry-1: GET x\n```\n")
    course = Course.load(tmp_path, scripts=SCRIPTS)
    found = [(page.path, p.name, p.line, [q.id for q in p.questions]) for page, p in course.placements()]
    assert found == [("/beta/only", "console", 23, []), ("/alpha/second", "fanin", 23, ["deps"])]
    assert [(q.id, q.reading) for q in course.page("/alpha/second").placements[0].questions] == [
        ("deps", "dependencies")]


def test_a_placement_check_that_refuses_stops_the_load_naming_the_dive_and_the_line(tmp_path):
    _site(tmp_path)
    _write(tmp_path, "alpha/second.md", DIVE.format(title="Second", order=2, extra="") + QUESTIONED)
    seen = []

    def check(page, placement):
        seen.append((page.path, placement.name))
        for question in placement.questions:
            if question.reading == "dependencies":
                raise DirectiveError(f"fanin has no reading {question.reading!r}", question.line)

    with pytest.raises(ContentError, match=r"alpha/second\.md:25: fanin has no reading 'dependencies'"):
        Course.load(tmp_path, scripts=SCRIPTS).check_placements(check)
    assert seen == [("/alpha/second", "fanin")]

    def refuse_the_fence(page, placement):
        raise ContentError("no such widget here")

    with pytest.raises(ContentError, match=r"alpha/second\.md:23: no such widget here"):
        Course.load(tmp_path, scripts=SCRIPTS).check_placements(refuse_the_fence)


def test_a_broken_question_stops_the_load_naming_the_dive_and_its_line(tmp_path):
    _site(tmp_path)
    broken = QUESTIONED.replace('legend: "Predict: what', 'legend: "Guess: what')
    _write(tmp_path, "alpha/second.md", DIVE.format(title="Second", order=2, extra="") + broken)
    with pytest.raises(ContentError, match=r"alpha/second\.md:27: a question's legend starts with 'Predict'"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_one_widgets_questions_are_declared_in_one_place_only(tmp_path):
    _site(tmp_path)
    _write(tmp_path, "alpha/second.md", DIVE.format(title="Second", order=2, extra="") + QUESTIONED)
    _write(tmp_path, "alpha/first.md", DIVE.format(title="First", order=1, extra="") + QUESTIONED)
    with pytest.raises(ContentError, match=r"alpha/second\.md:23: questions for 'fanin' are declared again "
                                           r"\(first at .*alpha/first\.md:23\)"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_render_widget_draws_each_widget_of_a_questioned_placement(tmp_path):
    _site(tmp_path)
    _write(tmp_path, "alpha/second.md", DIVE.format(title="Second", order=2, extra="") + QUESTIONED)
    page = Course.load(tmp_path, scripts=SCRIPTS).page("/alpha/second")
    html = page.render_body(lambda name, options: f'<b data-widget="{name}"></b>')
    assert '<b data-widget="fanin"></b>' in html
    assert '<aside class="dive-aside">' in html
