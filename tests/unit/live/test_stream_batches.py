"""How the stream gathers notices into one batch (one snapshot read each):
a widget's action is read once, right after its lock is let go; writes
outside any action are gathered for a short window."""

from __future__ import annotations

import asyncio

from server.live import fanout
from server.live.fanout import Notice, Subscription

Q = "s0123456789.fanin"


def lock(event: str) -> Notice:
    return Notice("lock", {"queue": Q, "key": f"lab:{{{Q}}}:lock", "event": event})


def effect(key: str) -> Notice:
    return Notice("effect", {"queue": Q, "key": f"emq:{{{Q}}}:{key}", "event": "hset"})


async def later(sub: Subscription, seconds: float, *notices: Notice) -> None:
    await asyncio.sleep(seconds)
    for notice in notices:
        sub.push(notice)


async def test_an_action_is_one_batch_from_its_lock_to_its_release_and_nothing_after() -> None:
    queue = Subscription("s0123456789")
    # the action's writes come in over a few round trips, the release last;
    # a write just after the release (another action's) waits for the next batch
    feeding = asyncio.gather(later(queue, 0.002, effect("active")), later(queue, 0.004, effect("job:A")),
                             later(queue, 0.006, lock("del")), later(queue, 0.008, effect("pending")))
    batch = await queue.batch(lock("set"))
    await feeding
    assert [n.data["key"].rsplit(":", 1)[-1] for n in batch] == ["lock", "active", "A", "lock"]
    assert queue.queue.qsize() == 1


async def test_an_action_that_outlasts_the_window_is_still_read_once_at_its_end() -> None:
    queue = Subscription("s0123456789")
    slow = fanout.COALESCE_SECONDS * 2
    feeding = asyncio.gather(later(queue, slow, effect("active")), later(queue, slow + 0.002, lock("del")))
    batch = await queue.batch(lock("set"))
    await feeding
    assert [n.kind for n in batch] == ["lock", "effect", "lock"]


async def test_writes_outside_an_action_are_gathered_for_the_window() -> None:
    queue = Subscription("s0123456789")
    feeding = asyncio.gather(later(queue, fanout.COALESCE_SECONDS / 3, effect("note")),
                             later(queue, fanout.COALESCE_SECONDS * 3, effect("other")))
    batch = await queue.batch(effect("first"))
    await feeding
    assert [n.data["key"].rsplit(":", 1)[-1] for n in batch] == ["first", "note"]


async def test_a_release_seen_without_its_start_ends_the_batch_at_once() -> None:
    queue = Subscription("s0123456789")
    batch = await queue.batch(lock("del"))
    assert [n.kind for n in batch] == ["lock"]
