"""Driving widgets in tests the way a click does: through the executor, on a real Valkey.

    acted = await act(conn, "fanin", "complete-child")       # runner.act, body typed as the action's
    snap = await snapshot_of(conn, "fanin")                 # what every page would paint now

The catalog carries the questions the dives declare (the course is loaded
once), so a test can answer one: `act(conn, "fanin", "complete-child",
predict={"question": "…", "answer": 2})`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import msgspec

from server.app import bind_questions
from server.content import load_course
from server.emq.wire import Conn
from server.widgets import WIDGETS, reader, runner
from server.widgets.runner import Acted, Lab
from server.widgets.snapshot import Catalog, Snapshot
from server.widgets.turn import Actor

SANDBOX = "s0123456789"  # the sandbox widget tests act in
SITE = Path(__file__).resolve().parents[1] / "site"


@functools.cache
def catalog() -> Catalog:
    found = Catalog(dict(WIDGETS))
    bind_questions(found, load_course(SITE / "content"))
    return found


def lab(conn: Conn) -> Lab:
    return Lab(conn, catalog())


def as_sent(snap: Snapshot) -> Snapshot:
    """The snapshot with its typed parts as `GET /api/widgets/<name>/state` sends them (JSON's
    types): the tests read `picture["parent"]["dependencies"]` as outside tools do."""
    return msgspec.structs.replace(snap, **{part: msgspec.to_builtins(getattr(snap, part)) for part in (
        "queues", "picture", "outcome", "questions", "steps")})


async def show(conn: Conn, name: str, sandbox: str = SANDBOX) -> Snapshot:
    """What a page opening the widget gets (the scenario lands the first time)."""
    return as_sent(await runner.show(lab(conn), WIDGETS[name], Actor(sandbox, sandbox)))


async def act(conn: Conn, name: str, slug: str, sandbox: str = SANDBOX, *, actor: Actor | None = None,
              **body: Any) -> Acted:
    """One action as a click runs it (lock, action, verdict, record)."""
    widget = WIDGETS[name]
    typed = msgspec.convert(body, widget.actions[slug].body)
    return await runner.act(lab(conn), widget, actor or Actor(sandbox, sandbox), slug, typed)


async def snapshot_of(conn: Conn, name: str, sandbox: str = SANDBOX) -> Snapshot:
    """The snapshot every page of the sandbox would paint now."""
    return as_sent((await reader.snapshot(conn, catalog(), WIDGETS[name], sandbox))[1])
