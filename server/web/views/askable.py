"""What a class can be asked: each (question, step) open where a widget's tour presses
its button next, so the whole class answers from one same state.

Found by playing each tour once on Valkey, in a scratch sandbox removed afterwards,
the first time a class page needs it; kept for the process's life (the tours and
the questions are the code's and the dives').
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from dataclasses import dataclass

import msgspec
from redis.exceptions import RedisError

from server.lifecycle import removal
from server.widgets import questions, reader, runner
from server.widgets.base import Widget
from server.widgets.turn import Actor

_FOUND: list[Askable] = []
_LOCK = asyncio.Lock()


@dataclass(frozen=True)
class Askable:
    widget: str
    question: str
    legend: str
    step: int
    step_label: str
    action: str
    label: str  # the action's button, as the widget shows it

    @property
    def value(self) -> str:
        return f"{self.widget}|{self.question}|{self.step}"


async def askable(lab: runner.Lab) -> list[Askable]:
    """Every askable (question, step), found once (Valkey away: none yet, found on a later call)."""
    async with _LOCK:
        if not _FOUND:
            with contextlib.suppress(RedisError, OSError):
                _FOUND.extend(await _play_all(lab))
    return list(_FOUND)


async def _play_all(lab: runner.Lab) -> list[Askable]:
    sandbox = "sask" + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(7))
    try:
        return [found for widget in lab.catalog.widgets.values() if lab.catalog.asked(widget)
                for found in await _play(lab, widget, sandbox)]
    finally:
        with contextlib.suppress(RedisError, OSError):
            await removal.delete(lab.conn, lab.catalog, sandbox)


async def _play(lab: runner.Lab, widget: Widget, sandbox: str) -> list[Askable]:
    """The widget's tour from its landing: the question open before each step's first press."""
    actor, declared = Actor(sandbox, sandbox, records=False), lab.catalog.asked(widget)
    found: list[Askable] = []
    await runner.act(lab, widget, actor, "reset", widget.actions["reset"].body())
    for step, entry in enumerate(widget.tour):
        slug = entry.replay[0][0] if entry.replay else ""
        now = await reader.read(lab.conn, widget, sandbox)
        question = next((q for q in questions.offered(widget, declared, now) if q.action == slug), None)
        if question is not None:
            label = widget.tour[step - 1].label if step else "the scenario as it lands"
            found.append(Askable(widget.name, question.id, question.legend, step, label, slug, widget.label(slug)))
        for action, raw in entry.replay:
            await runner.act(lab, widget, actor, action, msgspec.convert(raw, widget.actions[action].body))
    return found
