"""Static traces: each widget's tour, run once on Valkey, kept as rows.

Without JavaScript a widget cannot be driven, so its partial shows what a real
run did instead: when the app starts, every widget plays its `tour` (the same
walk-through `#<widget>-step=N` replays) in a scratch sandbox of its own, the
keys are read back after landing and after each step, and each step becomes
one row: the action, the outcome sentence the widget said, the readout built
from the keys, and the keys that step created, changed or removed. The scratch
sandbox is deleted afterwards. Nothing in a row is made up: it is what Valkey
held at that moment.

A trace is a function of the code (the scripts and the widgets), not of any
visitor, so one recording serves every page of this process. If Valkey cannot
be reached at startup, the pages render without traces and a background task
retries; when the traces arrive, the cached page bodies are dropped so the
next request renders them in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any

import redis

from server.emq.wire import Conn
from server.sandboxes.lifecycle import delete_sandbox_keys
from server.widgets import WIDGETS, attempt, predict
from server.widgets.base import Context, Widget

log = logging.getLogger("emqlab.traces")

# Every recorded trace by widget name: read by server/web/partials.py.
RECORDED: dict[str, Trace] = {}
VALUE_WIDTH = 90  # characters of a key's value shown in a row
FIELD_WIDTH = 40  # characters of one hash field's value; the field names are never cut
RETRY_FIRST, RETRY_MOST = 1.0, 30.0  # seconds between attempts while Valkey is away


@dataclass(frozen=True)
class KeyChange:
    key: str  # the key's name after its hashtag, with the queue when the widget has several
    kind: str  # new | changed | gone
    value: str  # its value in short, as Valkey holds it ("" when gone)


@dataclass(frozen=True)
class Row:
    step: int
    label: str
    outcome: str
    kind: str  # ok | refused | info
    readout: str
    keys: int
    changes: tuple[KeyChange, ...] = ()
    # The question the widget asks before this step, and what Valkey held after it.
    question: str = ""
    answer: str = ""


@dataclass
class Trace:
    widget: str
    title: str
    rows: list[Row] = field(default_factory=list)


def current(name: str) -> Trace | None:
    return RECORDED.get(name)


def scratch_id() -> str:
    """A valid sandbox id for one recording (several workers never share one)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "strace" + "".join(secrets.choice(alphabet) for _ in range(5))


def _cut(text: str, width: int = VALUE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _fields(pairs: list[tuple[Any, Any]]) -> str:
    # Every field name shows in full (parent_queue, parent_policy are what a
    # dive is about); only a long value, such as a payload, is shortened.
    return ", ".join(f"{k}={_cut(str(v), FIELD_WIDTH)}" for k, v in pairs)


def short_value(kind: str, value: Any) -> str:
    """A key's value in a few words: hash fields, set members (no scores: a
    lease deadline says nothing here), a list's length, a string as it is."""
    if kind == "hash":
        return _fields(list(value.items()))
    elif kind == "zset":
        text = "[" + ", ".join(str(m) for m, _ in value) + "]"
    elif kind == "list":
        text = f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    else:
        text = str(value)
    return _cut(text)


def what_changed(kind: str, old: Any, new: Any) -> str:
    """A changed key in short: the hash fields that moved, a string's before → after."""
    if kind == "hash" and isinstance(old, dict):
        moved = _fields([(k, v) for k, v in new.items() if old.get(k) != v])
        gone = ", ".join(f"{k} removed" for k in old if k not in new)
        return ", ".join(part for part in (moved, gone) if part)
    if kind == "string":
        return _cut(f"{old} → {new}")
    return short_value(kind, new)


def key_index(snap: dict[str, Any], sandbox: str, several: bool) -> dict[str, tuple[str, Any]]:
    """name shown in the trace -> (type, value), for every key of a snapshot."""
    found: dict[str, tuple[str, Any]] = {}
    for queue in snap["queues"]:
        where = queue["queue"].removeprefix(sandbox + ".")
        for key in queue["keys"]:
            suffix = key["name"].partition("}")[2].lstrip(":")
            found[f"{where} · {suffix}" if several else suffix] = (key["type"], key["value"])
    return found


def changes(before: dict[str, tuple[str, Any]], after: dict[str, tuple[str, Any]]) -> tuple[KeyChange, ...]:
    out = []
    for name, (kind, value) in after.items():
        if name not in before:
            out.append(KeyChange(name, "new", short_value(kind, value)))
        elif before[name] != (kind, value):
            old_kind, old = before[name]
            out.append(KeyChange(name, "changed", what_changed(kind, old, value) if old_kind == kind
                                 else short_value(kind, value)))
    out.extend(KeyChange(name, "gone", "") for name in before if name not in after)
    return tuple(out)


async def record(conn: Conn, widget: Widget, sandbox: str) -> Trace:
    """Play `widget`'s tour in `sandbox` (cleared first and afterwards)."""
    ctx = Context(conn, sandbox)
    several = len(widget.queue_parts) > 1
    trace = Trace(widget.name, widget.title)
    await delete_sandbox_keys(conn, sandbox)
    try:
        await widget.show(ctx)
        snap = await widget.snapshot(ctx)
        keys = key_index(snap, sandbox, several)
        trace.rows.append(Row(0, "Start", "The scenario as it lands, through the real scripts.", "info",
                              snap.get("readout", ""), len(keys), changes({}, keys)))
        for step, entry in enumerate(widget.trace_tour or widget.tour, 1):
            slug, body = widget.tour_step(entry)
            before = await attempt.moment(widget, ctx)
            question = predict.offer(widget.questions, before)
            outcome = await widget.perform_and_keep(ctx, slug, body)
            snap = await widget.snapshot(ctx)
            after = key_index(snap, sandbox, several)
            text = outcome.text.replace(sandbox + ".", "")  # queue names as the learner's page says them
            asked = answer = ""
            if question is not None and question.action == slug:
                truth = question.measure(await attempt.moment(widget, ctx), before)
                asked, answer = question.legend, f"Valkey held {predict.fact_of(question, truth)}."
            trace.rows.append(Row(step, widget.label(slug), text, outcome.kind,
                                  snap.get("readout", ""), len(after), changes(keys, after), asked, answer))
            keys = after
    finally:
        await delete_sandbox_keys(conn, sandbox)
    return trace


async def record_all(conn: Conn) -> dict[str, Trace]:
    found: dict[str, Trace] = {}
    sandbox = scratch_id()
    for name, widget in WIDGETS.items():
        try:
            found[name] = await record(conn, widget, sandbox)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            raise  # Valkey is away: try them all again later
        except Exception:
            log.exception("could not record the trace of widget %s", name)
    return found


def _arrived(app: Any, found: dict[str, Trace]) -> None:
    RECORDED.update(found)
    bodies = getattr(app.state, "page_bodies", None)
    if bodies:
        bodies.clear()  # rendered without traces: render again with them


async def _retry(app: Any) -> None:
    delay = RETRY_FIRST
    while True:
        await asyncio.sleep(delay)
        try:
            _arrived(app, await record_all(app.state.conn))
            log.info("static traces recorded")
            return
        except (redis.RedisError, OSError):
            delay = min(delay * 2, RETRY_MOST)


async def start(app: Any) -> None:
    """Record every widget's trace now; if Valkey is away, keep retrying in the background."""
    try:
        _arrived(app, await record_all(app.state.conn))
    except (redis.RedisError, OSError) as exc:
        log.warning("Valkey unreachable (%s): pages show no static trace until it answers", exc)
        app.state.trace_task = asyncio.create_task(_retry(app))


async def stop(app: Any) -> None:
    task = getattr(app.state, "trace_task", None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
