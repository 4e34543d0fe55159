"""The widgets a console write touches: held around it, and told what it wrote.

A write to a widget's queue goes through that widget's own action lock
(`Widget.begin` / `finish`, as a click does): it waits behind a running
action, lands the scenario if it has not landed, is refused past the key cap,
and ends by recording the widget's key count and a new version, so every
open page repaints. A key no rule of the widget's snapshot finds (a row of an
id in no state set, `emq:{fanin}:note`) is listed in the queue's index of
extra keys, so the key panel shows what the console wrote.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from server.console.allow import Refusal
from server.widgets import WIDGETS, snapshot, turn, widget_for_queue
from server.widgets.base import Context, Widget

INDEX_CAP = 64  # extra key names one queue lists at most


def owners(ctx: Context, queues: set[str]) -> list[Widget]:
    """The widgets of the written queues, in one order (two writes never deadlock)."""
    names = {widget_for_queue(ctx.queue(q)) for q in queues}
    return [WIDGETS[n] for n in sorted(n for n in names if n)]


@asynccontextmanager
async def held(ctx: Context, queues: set[str], key_cap: int) -> AsyncIterator[list[Widget]]:
    """Hold the lock of every widget owning `queues` while the write runs."""
    taken: list[tuple[Widget, str]] = []
    try:
        for widget in owners(ctx, queues):
            taken.append((widget, await widget.begin(ctx, key_cap)))
        yield [w for w, _ in taken]
    except BaseException:
        for widget, token in reversed(taken):
            await widget.release(ctx, token)
        raise
    for widget, token in reversed(taken):
        await turn.finish(widget, ctx, token, "")


def extra(real: str, queue_base: str) -> bool:
    """A key the snapshot's rules do not find by themselves (not a queue key)."""
    return real[len(queue_base):] not in snapshot.QUEUE_SUFFIXES if real.startswith(queue_base) else False


async def index(ctx: Context, written: dict[str, list[str]]) -> None:
    """List each key a write names in its queue's index (`written`: queue -> real keys).

    Done before the write, under the widget's lock: a name listed for a key
    the write then does not create is skipped by the snapshot (TYPE none).
    """
    for queue, keys in written.items():
        full = ctx.queue(queue)
        names = list(dict.fromkeys(k for k in keys if extra(k, f"emq:{{{full}}}:")))
        if not names:
            continue
        key = snapshot.index_key(full)
        async with ctx.conn.pipeline(transaction=False) as pipe:
            pipe.scard(key)
            pipe.smismember(key, names)
            size, present = await pipe.execute()
        new = [n for n, p in zip(names, present) if not int(p)]
        if new and int(size) + len(new) > INDEX_CAP:
            raise Refusal(409, f"the console adds at most {INDEX_CAP} new keys to one queue;"
                                " press Reset on its widget.")
        if new:
            await ctx.conn.sadd(key, *new)
