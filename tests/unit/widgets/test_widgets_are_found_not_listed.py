"""Widgets are found by the code (server/widgets/__init__.py), never listed by hand.

A widget is its module, its partial, its script and its place in a dive:
these tests list what discovery found, check each has its files, and fail
when a source file spells out a list of widget names of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

from server.widgets import WIDGETS, discover

ROOT = Path(__file__).resolve().parents[3]
# The one place allowed to name widgets one by one: DESIGN.md's table of region
# words, which tests outside the project rely on.
CONTRACT = {ROOT / "tests" / "contract.py"}
LITERAL = re.compile(r"[\[({]([^\[\](){}]*)[\])}]", re.S)


def test_the_widgets_found_are_the_modules_that_define_one() -> None:
    found = discover()
    print("widgets found:", ", ".join(found))
    assert list(found) == sorted(found) and set(found) == set(WIDGETS)
    assert len(found) >= 8
    for name, widget in found.items():
        assert type(widget).__module__.startswith("server.widgets."), name


def test_each_widget_has_its_partial_and_its_script() -> None:
    for name in WIDGETS:
        partial = ROOT / "site" / "templates" / "widgets" / f"_{name}.html"
        script = ROOT / "site" / "static" / "widgets" / f"{name}.js"
        assert f'data-widget="{name}"' in partial.read_text(encoding="utf-8"), partial
        assert f'register("{name}"' in script.read_text(encoding="utf-8"), script


def listed_by_hand(text: str) -> list[str]:
    """Bracketed literals that spell out three or more widget names."""
    hits = []
    for literal in LITERAL.finditer(text):
        named = {w for w in WIDGETS if re.search(rf"""["']{re.escape(w)}["']""", literal.group(1))}
        if len(named) >= 3:
            hits.append(", ".join(sorted(named)))
    return hits


def test_no_source_file_lists_widget_names_by_hand() -> None:
    offenders = {}
    for folder in ("server", "tests", "bench", "tools"):
        for path in (ROOT / folder).rglob("*.py"):
            if path in CONTRACT or path == Path(__file__).resolve():
                continue
            hits = listed_by_hand(path.read_text(encoding="utf-8"))
            if hits:
                offenders[str(path.relative_to(ROOT))] = hits
    assert offenders == {}


def test_the_check_catches_a_list_written_by_hand() -> None:
    assert listed_by_hand('KNOWN = ("fanin", "outbox", "ledger")') == ["fanin, ledger, outbox"]
    assert listed_by_hand('pick = {"fanin": 1, "tree": 2}') == []
