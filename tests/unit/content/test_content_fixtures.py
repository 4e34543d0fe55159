"""Fixture files (mdit-py-plugins style): title, input, expected HTML."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it.utils import read_fixture_file

from server.content.host_code import HostFiles
from server.content.markdown import make_markdown
from server.content.scripts import DirScripts

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTS = DirScripts(FIXTURES / "scripts")
HOST = HostFiles(FIXTURES / "host")
WIDGETS = {"enqueue-stepper", "fanin", "native", "outbox", "failure-policy", "ledger", "results", "tree"}


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
