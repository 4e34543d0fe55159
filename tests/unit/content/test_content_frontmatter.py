"""The front matter grammar: a strict subset of YAML."""

from __future__ import annotations

import pytest

from server.content.frontmatter import FrontMatterError, parse_front_matter


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
        "lede": "one long paragraph over two lines",
        "next": {"page": "/flows/reading-the-results", "note": "the three reads"},
        "related": [{"page": "/flows", "note": "the module"}, {"title": "The Protocol"}],
        "tags": ["plain item"],
        "quoted": "- starts with a dash: and has a colon",
    }


def test_inline_code_and_middle_dots_stay_plain_text():
    assert parse_front_matter("kicker: Flows · dive 01\nnote: reads `:processed`\n") == {
        "kicker": "Flows · dive 01",
        "note": "reads `:processed`",
    }


@pytest.mark.parametrize(
    "text,line",
    [
        ("title: a\ntitle: b\n", 2),  # repeated key
        ("Title: capitalised key\n", 1),
        ("title:no space\n", 1),
        ("  indented: at top\n", 1),
        ("title:\n", 1),  # no value at all
        ("title: [a, b]\n", 1),  # flow syntax
        ("title: a: b\n", 1),  # would be ambiguous in YAML
        ("title: text # comment\n", 1),
        ("list:\n  - a\n   - b\n", 3),  # bad indentation
        ("map:\n  key:\n    deeper: x\n", 2),  # nesting too deep
        ("title: x\n\tlede: y\n", 2),
        ('title: "unterminated\n', 1),
    ],
)
def test_anything_outside_the_grammar_is_an_error_naming_its_line(text, line):
    with pytest.raises(FrontMatterError) as info:
        parse_front_matter(text)
    assert info.value.line == line
