"""Removing a sandbox: every key it may hold, found by name, never by a scan (`clear.lua` on
its widgets' queues, DEL of its own records), so its cost does not grow with Valkey's size."""

from __future__ import annotations

from server.console import transcript
from server.emq.wire import Conn
from server.sandboxes import admission, keys
from server.sandboxes.sandbox import SANDBOX_RE, queue_name
from server.widgets.reader import pipelined
from server.widgets.snapshot import Catalog
from server.widgets.turn import clear_call


def checked(sandbox: str) -> str:
    if not SANDBOX_RE.fullmatch(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    return sandbox


async def delete(conn: Conn, catalog: Catalog, sandbox: str) -> int:
    """Remove every key of `sandbox`: the number removed."""
    checked(sandbox)
    # `clear.lua` for every widget queue of the sandbox (lab state included)
    calls = [clear_call(w, sandbox, part) for w in catalog.widgets.values() for part in w.queue_parts]
    locks = [keys.lock_key(queue_name(sandbox, w.queue_parts[0])) for w in catalog.widgets.values()]
    names = [keys.meta_key(sandbox), keys.progress_key(sandbox), keys.work_key(sandbox),
             *await transcript.keys_of(conn, sandbox)]
    # one DEL for `names`: every lab:{<sandbox>}:… key shares the sandbox's slot
    replies = await pipelined(conn, [*calls, *(("DEL", lock) for lock in locks), ("DEL", *names),
                                     ("ZREM", admission.HELD_KEY, sandbox)])
    return sum(int(r) for r in replies[:-1] if isinstance(r, int))
