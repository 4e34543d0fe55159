"""Widgets are found by the code (server/widgets/__init__.py), never listed by hand.

A widget is its own few files: its module (with its row of DESIGN.md's table,
`Widget.design`), its template and its place in a dive. These tests list what
discovery found, check each has its files, and fail when any other file of the
repository spells out widget names of its own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

import pytest

from server.widgets import WIDGETS, check_parts, discover
from server.widgets.base import Design, Widget

ROOT = Path(__file__).resolve().parents[3]
LITERAL = re.compile(r"[\[({]([^\[\](){}]*)[\])}]", re.S)
SCANNED = {"server": ("*.py", "*.lua"), "tests": ("*.py",), "bench": ("*.py",), "tools": ("*.py",),
           "site/templates": ("*.html",), "site/static": ("*.js", "*.css")}


def own_files(name: str) -> set[Path]:
    """The widget's own files: its module, its template, its stylesheet."""
    widget = WIDGETS[name]
    module = ROOT / (type(widget).__module__.replace(".", "/") + ".py")
    return {module, ROOT / "site" / "templates" / "widgets" / f"_{name}.html",
            ROOT / "site" / "static" / "widgets" / f"{name}.css"}


def test_the_widgets_found_are_the_modules_that_define_one() -> None:
    found = discover()
    print("widgets found:", ", ".join(found))
    assert list(found) == sorted(found) and set(found) == set(WIDGETS)
    assert len(found) >= 8
    for name, widget in found.items():
        assert type(widget).__module__.startswith("server.widgets."), name


def test_each_widget_is_drawn_by_its_one_template_and_has_no_script_of_its_own() -> None:
    for name, widget in WIDGETS.items():
        partial = ROOT / "site" / "templates" / "widgets" / f"_{name}.html"
        text = partial.read_text(encoding="utf-8")
        assert '{% extends "widgets/_widget.html" %}' in text, partial
        # the heading names the region with the design's words
        title = re.search(r"{% block title %}(.*?){% endblock %}", text, re.S)
        assert title and widget.design.region.lower() in title.group(1).lower(), (name, widget.design.region)
        assert not (ROOT / "site" / "static" / "widgets" / f"{name}.js").exists(), name


def names_listed(text: str) -> list[str]:
    """Bracketed literals that spell out three or more widget names, each quoted (a list of widgets)."""
    hits = []
    for literal in LITERAL.finditer(text):
        named = {w for w in WIDGETS if re.search(rf"""["']{re.escape(w)}["']""", literal.group(1))}
        if len(named) >= 3:
            hits.append(", ".join(sorted(named)))
    return hits


def test_no_file_outside_a_widgets_own_lists_widget_names_by_hand() -> None:
    own = {path for name in WIDGETS for path in own_files(name)}
    offenders = {}
    for folder, patterns in SCANNED.items():
        for pattern in patterns:
            for path in (ROOT / folder).rglob(pattern):
                if path in own or path == Path(__file__).resolve() or "node_modules" in path.parts:
                    continue
                hits = names_listed(path.read_text(encoding="utf-8"))
                if hits:
                    offenders[str(path.relative_to(ROOT))] = hits
    assert offenders == {}


def test_the_check_catches_a_list_written_by_hand() -> None:
    assert names_listed('KNOWN = ("fanin", "outbox", "ledger")') == ["fanin, ledger, outbox"]
    assert names_listed("pick = {'fanin': 1, 'tree': 2, 'native': 3}") == ["fanin, native, tree"]
    assert names_listed('pair = ("fanin", "tree")') == []
    assert names_listed('WIDGETS["fanin"].dive') == []


class _One(Widget):
    name = "one"
    title = "One"
    design = Design("one")
    queue_parts: ClassVar[tuple[str, ...]] = ("shared", "one")


class _Two(Widget):
    name = "two"
    title = "Two"
    design = Design("two")
    queue_parts: ClassVar[tuple[str, ...]] = ("two", "shared")


def test_a_queue_part_two_widgets_claim_stops_the_start_naming_both() -> None:
    with pytest.raises(RuntimeError, match=r"'one' and 'two' both claim the queue part 'shared'"):
        check_parts({"one": _One(), "two": _Two()})
    check_parts(WIDGETS)  # the site's own widgets: every part once
