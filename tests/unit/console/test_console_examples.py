"""Every dive places a console, and each of its examples is a command the
console runs (no refusal) on the queues of that dive's own widgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.console.api import page_context
from server.console.confine import KEY_RE, Confinement
from server.console.parse import Limits
from server.console.plan import plan
from server.content import load_course
from server.widgets import WIDGETS

ROOT = Path(__file__).resolve().parents[3]

COURSE = load_course(ROOT / "site" / "content")
DIVES = list(COURSE.dives)


def console_options(path: str) -> dict[str, str]:
    page = COURSE.page(path)
    assert page is not None
    found = next((p.options for p in page.placements if p.name == "console"), None)
    assert found is not None, f"{path} has no console"
    return dict(found)


@pytest.mark.parametrize("dive", DIVES, ids=[d.path for d in DIVES])
def test_every_dive_has_a_console_near_its_end(dive: object) -> None:
    assert dive.widgets[-1] == "console"


@pytest.mark.parametrize("dive", DIVES, ids=[d.path for d in DIVES])
def test_every_example_runs_on_the_queues_of_that_dives_widgets(dive: object) -> None:
    path, widgets = dive.path, dive.widgets
    found = page_context(console_options(path))["examples"]
    assert len(found) >= 3
    own = {part for name in widgets if name in WIDGETS for part in WIDGETS[name].queue_parts}
    course = frozenset(part for widget in WIDGETS.values() for part in widget.queue_parts)
    where = Confinement("s0a1b2c3d4e", course)
    for command in found:
        plan(command, where, Limits())  # raises on a refusal
        for word in command.split():
            key = KEY_RE.fullmatch(word.replace("*", "x"))
            if key:
                queue = key["queue"]
                assert any(q == queue or q.startswith(queue) for q in own), (path, command)
