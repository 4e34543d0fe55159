"""Front matter is YAML, read by PyYAML: every value stays the text written,
and every problem names its line in the Markdown file."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from server.content import ContentError, Course
from server.content.errors import FrontMatterError
from server.content.pages import parse_front_matter

SCRIPTS = Path(__file__).parent / "fixtures" / "scripts"


def test_scalars_folded_text_lists_and_mappings_parse():
    text = """\
# a comment line
title: Parent and children
order: 1
lede: >
  one long paragraph
  over two lines
next:
  page: /flows/reading-the-results
  note: the three reads
related:
  - page: /flows
    note: the module
  - title: The Protocol
tags:
  - plain item
quoted: "- starts with a dash: and has a colon"
"""
    assert parse_front_matter(text) == {
        "title": "Parent and children",
        "order": "1",
        "lede": "one long paragraph over two lines\n",
        "next": {"page": "/flows/reading-the-results", "note": "the three reads"},
        "related": [{"page": "/flows", "note": "the module"}, {"title": "The Protocol"}],
        "tags": ["plain item"],
        "quoted": "- starts with a dash: and has a colon",
    }


def test_every_value_stays_the_text_written_never_a_yaml_boolean_number_or_date():
    meta = parse_front_matter("a: no\nb: yes\nc: 1.10\nd: 2024-01-02\ne: ~\nf: 0x1F\n")
    assert meta == {"a": "no", "b": "yes", "c": "1.10", "d": "2024-01-02", "e": "~", "f": "0x1F"}


def test_inline_code_and_middle_dots_stay_plain_text():
    assert parse_front_matter("kicker: Flows · dive 01\nnote: reads `:processed`\n") == {
        "kicker": "Flows · dive 01",
        "note": "reads `:processed`",
    }


def test_mappings_and_lists_know_the_file_line_of_each_key_and_item():
    meta = parse_front_matter("title: T\nrelated:\n  - page: /a\n  - title: B\n    note: n\n", first_line=2)
    assert meta.line_of("title") == 2 and meta.line_of("related") == 3
    assert meta["related"].item_lines == [4, 5]
    assert meta["related"][1].line_of("note") == 6


@pytest.mark.parametrize(
    "text,line",
    [
        ("title: a\ntitle: b\n", 3),  # a repeated key: PyYAML alone would keep the last
        ("title: [a, b\n", 3),  # an unclosed flow list
        ("title: a: b\n", 2),  # ': ' inside a plain value
        ("list:\n  - a\n  y: z\n", 4),  # a list item, then a mapping key at its indentation
        ("a: &x [*x]\n", 2),  # an alias that refers to itself
        ("? [a]\n: b\n", 2),  # a key that is not plain text
        ("title: x\n\tlede: y\n", 3),  # a tab
        ('title: "unterminated\n', 3),
        ("- a list\n- not a mapping\n", 2),
        ("", 2),  # empty
    ],
)
def test_anything_that_is_not_a_yaml_mapping_is_an_error_naming_its_file_line(text, line):
    with pytest.raises(FrontMatterError) as info:
        parse_front_matter(text, first_line=2)
    assert info.value.line == line


def _site(root: Path, dive_front: str) -> None:
    files = {
        "index.md": "---\ntitle: Course\nlede: Welcome.\n---\n\nHello.\n",
        "alpha/index.md": "---\ntitle: Alpha\norder: 1\nlede: The hub.\n---\n",
        "alpha/one.md": f"---\n{textwrap.dedent(dive_front)}---\n\n## Only\n\nBody.\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


DIVE = """\
title: One
order: 1
lede: The lede.
pattern: A pattern.
implementation: An implementation.
recap: A recap.
next:
  page: /alpha
  note: back.
sources:
  - title: Valkey — SET
    href: https://valkey.io/commands/set/
    note: the counter.
"""


def test_a_broken_front_matter_stops_the_load_naming_the_file_and_its_line(tmp_path):
    _site(tmp_path, DIVE.replace("recap: A recap.", "recap: a: b"))
    with pytest.raises(ContentError, match=r"alpha/one\.md:7: not valid YAML: mapping values"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_a_field_of_the_wrong_shape_is_named_with_its_line(tmp_path):
    _site(tmp_path, DIVE.replace("recap: A recap.", "recap:\n  - not text"))
    with pytest.raises(ContentError, match=r"alpha/one\.md:7: recap must be text"):
        Course.load(tmp_path, scripts=SCRIPTS)


def test_a_link_entry_naming_no_page_is_named_with_its_line(tmp_path):
    _site(tmp_path, DIVE + "related:\n  - page: /alpha/missing\n    note: typo.\n")
    with pytest.raises(ContentError, match=r"alpha/one\.md:16: related: '/alpha/missing' is not a page"):
        Course.load(tmp_path, scripts=SCRIPTS)
