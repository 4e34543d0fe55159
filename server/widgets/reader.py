"""Reading a widget: its queues and lab state in one round trip, and the snapshot
every page draws. The action's lock (`turn.py`) starts from the same read; the
stream, the first paint and `GET …/state` read through `snapshots`: a page's
widgets, however many, in one round trip.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from server.emq.script import Call, Script, execute, raise_first
from server.emq.wire import Conn
from server.sandboxes import keys, progress
from server.sandboxes.sandbox import queue_name
from server.valkey.client import node_of
from server.widgets.snapshot import Catalog, Snapshot, compose
from server.widgets.view import Moment, decode

if TYPE_CHECKING:
    from server.widgets.base import Widget

READ = Script.from_file(Path(__file__).resolve().parent / "scripts" / "read.lua")
SNAPSHOT_BYTES = 64 * 1024  # the values one read may carry (settings.snapshot_bytes)

Command = tuple[Any, ...]


def queues_of(widget: Widget, sandbox: str) -> dict[str, str]:
    """The widget's queues in a sandbox, by part: {"fanin": "<sandbox>.fanin"}."""
    return {part: queue_name(sandbox, part) for part in widget.queue_parts}


def read_calls(widget: Widget, sandbox: str, budget: int = SNAPSHOT_BYTES) -> list[Call]:
    """One `read.lua` call per queue (the lab state comes with the first)."""
    queues = queues_of(widget, sandbox)
    # names and values take three quarters; the rest is the snapshot's frame around them
    # (types, sizes, sets, the lab state), so the whole stays under `budget`
    share = budget * 3 // 4 // len(queues)
    # each queue's own lab keys (one slot per call); the lab state is the first queue's
    return [(READ, [keys.state_key(queue), keys.index_key(queue)],
             [f"emq:{{{queue}}}:", share, *widget.job_ids(part)]) for part, queue in queues.items()]


async def pipelined(conn: Conn, entries: Sequence[Call | Command]) -> list[Any]:
    """Script calls and plain commands in one round trip, in order: replies, errors in place (`execute`)."""
    calls = [entry if isinstance(entry[0], Script) else None for entry in entries]
    async with conn.pipeline(transaction=False) as pipe:
        for entry in entries:
            if isinstance(entry[0], Script):
                entry[0].queue(pipe, entry[1], entry[2])
            else:
                pipe.execute_command(*entry)
        return await execute(conn, pipe, calls)


def moment_of(conn: Conn, widget: Widget, sandbox: str, replies: Sequence[Any]) -> Moment:
    found = [decode(queue, part, sandbox, reply, node_of(conn, f"emq:{{{queue}}}:"))
             for (part, queue), reply in zip(queues_of(widget, sandbox).items(), replies)]
    return Moment({view.part: view for _, view in found}, found[0][0])  # the lab state is the first queue's


async def read(conn: Conn, widget: Widget, sandbox: str, budget: int = SNAPSHOT_BYTES) -> Moment:
    """Every queue of the widget and its lab state: one round trip."""
    replies = raise_first(await pipelined(conn, read_calls(widget, sandbox, budget)))
    return moment_of(conn, widget, sandbox, replies)


async def snapshots(conn: Conn, catalog: Catalog, widgets: Sequence[Widget], sandbox: str,
                    budget: int = SNAPSHOT_BYTES) -> list[tuple[Moment, Snapshot]]:
    """The widgets and the sandbox's record in one round trip, each composed into its snapshot."""
    calls = [read_calls(widget, sandbox, budget) for widget in widgets]
    progress_read = ("HGETALL", keys.progress_key(sandbox))
    replies = raise_first(await pipelined(conn, [*(c for each in calls for c in each), progress_read]))
    fields, at = progress.fields_of(replies[-1]), 0
    found: list[tuple[Moment, Snapshot]] = []
    for widget, each in zip(widgets, calls):
        moment = moment_of(conn, widget, sandbox, replies[at:at + len(each)])
        found.append((moment, compose(catalog, widget, moment, fields)))
        at += len(each)
    return found


async def snapshot(conn: Conn, catalog: Catalog, widget: Widget, sandbox: str,
                   budget: int = SNAPSHOT_BYTES) -> tuple[Moment, Snapshot]:
    """One widget and the sandbox's record in one round trip, composed into its snapshot."""
    return (await snapshots(conn, catalog, [widget], sandbox, budget))[0]
