"""Static traces: each widget's tour, run once on Valkey at start through the
executor, kept as rows for readers without JavaScript. If Valkey is away at
start, a background task retries and drops the cached pages when they arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import msgspec
from redis.exceptions import RedisError

from server.valkey.tasks import stop_tasks
from server.widgets import runner, snapshot
from server.widgets.base import Widget
from server.widgets.flow import plural
from server.widgets.questions import Verdict
from server.widgets.snapshot import Snapshot
from server.widgets.turn import Actor

log = logging.getLogger("emqlab.traces")

RECORDED: dict[str, Trace] = {}
WIDTH = 90  # characters of a value shown in a row
RETRY_FIRST, RETRY_MOST = 1.0, 30.0


@dataclass(frozen=True)
class KeyChange:
    key: str
    kind: str  # new | changed | gone
    value: str


@dataclass(frozen=True)
class Row:
    step: int
    label: str
    outcome: str
    kind: str
    readout: str
    keys: int
    changes: tuple[KeyChange, ...] = ()
    question: str = ""  # the question open before this step, when this step answers it
    answer: str = ""  # what Valkey held for that question after the step, in the question's words


@dataclass
class Trace:
    widget: str
    title: str
    rows: list[Row] = field(default_factory=list)


def current(name: str) -> Trace | None:
    return RECORDED.get(name)


def _short(kind: str, value: Any) -> str:
    if kind == "hash" and isinstance(value, dict):
        # every field name in full (parent_queue, parent_policy are what a dive is about); long values cut
        return ", ".join(f"{k}={_cut(str(v), 40)}" for k, v in value.items())
    if kind == "zset" and isinstance(value, list):
        text = "[" + ", ".join(str(m) for m, _ in value) + "]"
    elif kind == "list" and isinstance(value, list):
        text = plural(len(value), "entry", "entries")
    else:
        text = str(value)
    return _cut(text, WIDTH)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def keys_of(snap: Snapshot) -> dict[str, tuple[str, Any]]:
    several = len(snap.queues) > 1
    return {(f"{q['queue']} · " if several else "") + k["name"].partition("}")[2].lstrip(":"): (k["type"], k["value"])
            for q in snap.queues for k in q["keys"]}


def changes(before: dict[str, tuple[str, Any]], after: dict[str, tuple[str, Any]]) -> tuple[KeyChange, ...]:
    out = [KeyChange(n, "new" if n not in before else "changed", _short(*kv))
           for n, kv in after.items() if before.get(n) != kv]
    return (*out, *(KeyChange(n, "gone", "") for n in before if n not in after))


async def record(lab: runner.Lab, widget: Widget, sandbox: str) -> Trace:
    """Play `widget`'s tour in `sandbox` (landed afresh first)."""
    actor = Actor(sandbox, sandbox)
    trace = Trace(widget.name, widget.title)
    await runner.act(lab, widget, actor, "reset", widget.actions["reset"].body())
    _, snap = await snapshot.read(lab.conn, lab.catalog, widget, sandbox)
    keys = keys_of(snap)
    trace.rows.append(Row(0, "Start", "The scenario as it lands, through the real scripts.", "info",
                          snap.readout, len(keys), changes({}, keys)))
    for step in widget.tour:
        for slug, raw in step.replay:
            action = widget.actions[slug]
            open_ = next((q for q in snap.questions if q["action"] == slug), None)
            asked = open_["legend"] if open_ else ""
            # the question goes with the step, unanswered: the verdict says what Valkey held
            ask = {"predict": {"question": open_["id"], "answer": None}} if open_ else {}
            acted = await runner.act(lab, widget, actor, slug, msgspec.convert({**raw, **ask}, action.body))
            held = _held(lab, widget, acted.verdict) if acted.verdict else ""
            _, snap = await snapshot.read(lab.conn, lab.catalog, widget, sandbox)
            after = keys_of(snap)
            said = snap.outcome or acted.outcome  # the snapshot's: as a page shows it, no sandbox id
            trace.rows.append(Row(len(trace.rows), action.label, str(said["text"]),
                                  str(said["kind"]), snap.readout, len(after), changes(keys, after), asked,
                                  held))
            keys = after
    return trace


def _held(lab: runner.Lab, widget: Widget, verdict: Verdict) -> str:
    """What Valkey held for a question after its step, in the question's own words."""
    question = next((q for q in lab.catalog.asked(widget) if q.id == verdict.question), None)
    return f"Valkey held {question.says.format(value=question.words(verdict.truth))}." if question else ""


async def record_all(lab: runner.Lab, clear: Any) -> dict[str, Trace]:
    """Every widget's trace, in a scratch sandbox `clear(sandbox)` removes afterwards."""
    sandbox = "strace" + "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(5))
    found: dict[str, Trace] = {}
    try:
        for name, widget in lab.catalog.widgets.items():
            try:
                found[name] = await record(lab, widget, sandbox)
            except (RedisError, OSError):
                raise
            except Exception:
                log.exception("could not record the trace of widget %s", name)
    finally:
        with contextlib.suppress(RedisError, OSError):
            await clear(sandbox)
    return found


async def start(app: Any, clear: Any) -> None:
    """Record every trace now; if Valkey is away, keep retrying in the background."""

    def arrived(found: dict[str, Trace]) -> None:
        RECORDED.update(found)
        app.state.page_bodies.clear()  # pages drawn before the traces arrived lack them

    async def retry() -> None:
        delay = RETRY_FIRST
        while True:
            await asyncio.sleep(delay)
            try:
                arrived(await record_all(app.state.lab, clear))
                return
            except (RedisError, OSError):
                delay = min(delay * 2, RETRY_MOST)

    try:
        arrived(await record_all(app.state.lab, clear))
    except (RedisError, OSError) as exc:
        log.warning("Valkey unreachable (%s): pages show no static trace until it answers", exc)
        app.state.trace_task = asyncio.create_task(retry())


async def stop(app: Any) -> None:
    await stop_tasks([getattr(app.state, "trace_task", None)])
