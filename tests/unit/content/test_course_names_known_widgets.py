"""The course loader is handed the site's widgets (server/app.py): a dive that
places a widget the site does not have stops the start, naming the file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from server.app import PLACEABLE
from server.content import ContentError, load_course
from server.widgets import WIDGETS

CONTENT = Path(__file__).resolve().parents[3] / "site" / "content"
KNOWN = [*WIDGETS, *PLACEABLE]


def test_every_widget_the_course_places_is_one_the_site_has() -> None:
    course = load_course(CONTENT, known_widgets=KNOWN)
    placed = {name for dive in course.dives for name in dive.widgets}
    assert placed and placed <= set(KNOWN)


def test_a_dive_naming_an_unknown_widget_fails_the_load_with_its_file_and_line(tmp_path: Path) -> None:
    content = tmp_path / "content"
    shutil.copytree(CONTENT, content)
    dive = content / "flows" / "parent-and-children.md"
    dive.write_text(dive.read_text(encoding="utf-8").replace("```{widget} fanin", "```{widget} fanout", 1),
                    encoding="utf-8")
    with pytest.raises(ContentError, match=r"parent-and-children\.md:\d+: unknown widget 'fanout'"):
        load_course(content, known_widgets=KNOWN)
