"""Removing a sandbox: every key it may hold, found by name, never by a scan.

A sandbox's keys are of two kinds, both named without looking at any other
sandbox's: its widgets' queues (`<sandbox>.<part>`, cleared by `clear.lua`
on each queue's own slot, whatever types the keys hold, with the queue's lab
state, index, byte counter and lock), and its own `lab:{<sandbox>}:…` records
(activity, progress, the console's transcripts). So removing one sandbox
sends the same commands whether Valkey holds one sandbox or thousands.
"""

from __future__ import annotations

import json
from typing import Any

from server.console import transcript
from server.emq.script import Call, execute
from server.emq.wire import Conn, as_text
from server.sandboxes import admission, keys
from server.sandboxes.sandbox import SANDBOX_RE, queue_name
from server.widgets.snapshot import Catalog
from server.widgets.turn import CLEAR


def checked(sandbox: str) -> str:
    if not SANDBOX_RE.fullmatch(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    return sandbox


def clear_calls(catalog: Catalog, sandbox: str) -> list[Call]:
    """`clear.lua` for every widget queue of the sandbox (lab state included)."""
    calls: list[Call] = []
    for widget in catalog.widgets.values():
        for part in widget.queue_parts:
            queue = queue_name(sandbox, part)
            calls.append((CLEAR, [keys.state_key(queue), keys.index_key(queue), keys.spent_key(queue)],
                          [f"emq:{{{queue}}}:", json.dumps([]), *widget.job_ids(part)]))
    return calls


async def own_names(conn: Conn, sandbox: str) -> list[str]:
    """The sandbox's own records: activity, progress and its console transcripts."""
    visitors = [as_text(v) for v in await conn.smembers(transcript.visitors_key(sandbox))]
    consoles = [transcript.transcript_key(sandbox, v) for v in dict.fromkeys([sandbox, *visitors])]
    return [keys.meta_key(sandbox), keys.progress_key(sandbox), transcript.visitors_key(sandbox), *consoles]


async def delete(conn: Conn, catalog: Catalog, sandbox: str) -> int:
    """Remove every key of `sandbox`: the number removed."""
    checked(sandbox)
    calls: list[Call | None] = list(clear_calls(catalog, sandbox))
    locks = [keys.lock_key(queue_name(sandbox, w.queue_parts[0])) for w in catalog.widgets.values()]
    names = await own_names(conn, sandbox)
    async with conn.pipeline(transaction=False) as pipe:
        for call in calls:
            assert call is not None
            call[0].queue(pipe, call[1], call[2])
        for lock in locks:
            pipe.delete(lock)
        pipe.delete(*names)  # one DEL: every lab:{<sandbox>}:… key shares the sandbox's slot
        pipe.zrem(admission.HELD_KEY, sandbox)
        calls += [None] * (len(locks) + 2)
        replies: list[Any] = await execute(conn, pipe, calls)
    return sum(int(r) for r in replies[:-1] if isinstance(r, int))
