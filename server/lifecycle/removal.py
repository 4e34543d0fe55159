"""Removing a sandbox: every key it may hold, found by name, never by a scan.

Its widgets' queues are cleared by `clear.lua` (whatever types the keys hold),
and its own `lab:{<sandbox>}:…` records deleted, so removing one sandbox costs
the same whether Valkey holds one sandbox or thousands.
"""

from __future__ import annotations

import json

from server.console import transcript
from server.emq.script import Call, execute
from server.emq.wire import Conn
from server.sandboxes import admission, keys
from server.sandboxes.sandbox import SANDBOX_RE, queue_name
from server.widgets.snapshot import Catalog
from server.widgets.turn import CLEAR


def checked(sandbox: str) -> str:
    if not SANDBOX_RE.fullmatch(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    return sandbox


async def delete(conn: Conn, catalog: Catalog, sandbox: str) -> int:
    """Remove every key of `sandbox`: the number removed."""
    checked(sandbox)
    calls: list[Call] = []  # `clear.lua` for every widget queue of the sandbox (lab state included)
    for widget in catalog.widgets.values():
        for part in widget.queue_parts:
            queue = queue_name(sandbox, part)
            calls.append((CLEAR, [keys.state_key(queue), keys.index_key(queue), keys.spent_key(queue)],
                          [f"emq:{{{queue}}}:", json.dumps([]), *widget.job_ids(part)]))
    locks = [keys.lock_key(queue_name(sandbox, w.queue_parts[0])) for w in catalog.widgets.values()]
    names = [keys.meta_key(sandbox), keys.progress_key(sandbox), *await transcript.keys_of(conn, sandbox)]
    async with conn.pipeline(transaction=False) as pipe:
        for script, call_keys, argv in calls:
            script.queue(pipe, call_keys, argv)
        for lock in locks:
            pipe.delete(lock)
        pipe.delete(*names)  # one DEL: every lab:{<sandbox>}:… key shares the sandbox's slot
        pipe.zrem(admission.HELD_KEY, sandbox)
        replies = await execute(conn, pipe, [*calls, *[None] * (len(locks) + 2)])
    return sum(int(r) for r in replies[:-1] if isinstance(r, int))
