"""Fixture files (mdit-py-plugins style): title, input, expected HTML."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from markdown_it.utils import read_fixture_file

from server.content.course import make_markdown
from server.content.errors import DirectiveError
from server.widgets import WIDGETS as FOUND

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTS = FIXTURES / "scripts"
HOST = FIXTURES / "host"
WIDGETS = set(FOUND)


def _cases(name: str):
    return pytest.mark.parametrize(
        "line,title,text,expected",
        read_fixture_file(FIXTURES / name),
        ids=[f"{c[0]}-{c[1]}" for c in read_fixture_file(FIXTURES / name)],
    )


@_cases("widget_directive.md")
def test_widget_directive_fixture(line, title, text, expected):
    md = make_markdown(WIDGETS, SCRIPTS, sections=False)
    assert md.render(text) == expected


@_cases("listing_directive.md")
def test_listing_directive_fixture(line, title, text, expected):
    md = make_markdown(WIDGETS, SCRIPTS, sections=False, host=HOST)
    assert md.render(text) == expected


@_cases("sections.md")
def test_sections_fixture(line, title, text, expected):
    md = make_markdown(WIDGETS, SCRIPTS, sections=True)
    assert md.render(text) == expected


@_cases("raw_html.md")
def test_raw_html_fixture_is_escaped(line, title, text, expected):
    md = make_markdown(WIDGETS, SCRIPTS, sections=True)
    assert md.render(text) == expected


@_cases("questions.md")
def test_questions_fixture_parses_each_widget_body_into_a_placement(line, title, text, expected):
    md = make_markdown(None, SCRIPTS, sections=False)
    found = [t.meta["placement"] for t in md.parse(text, {}) if t.type == "widget"]
    placements = [{**asdict(p), "questions": [q.as_json() for q in p.questions]} for p in found]
    assert json.dumps(placements, indent=1, ensure_ascii=False) + "\n" == expected


@_cases("question_errors.md")
def test_question_errors_fixture_names_the_line_of_each_broken_declaration(line, title, text, expected):
    md = make_markdown(None, SCRIPTS, sections=False)
    with pytest.raises(DirectiveError) as info:
        md.parse(text, {})
    assert str(info.value) + "\n" == expected
