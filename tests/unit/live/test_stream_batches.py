"""How a sandbox's notices are gathered into one batch (one snapshot read
each): a widget's action is read once, right after its lock is let go;
writes outside any action are gathered for a short window; and a closed
batch reaches every page once, composed once per widget list."""

from __future__ import annotations

import asyncio
import contextlib

from server.live import gather
from server.live.fanout import Batch, Delivery, Fanout, Notice
from server.live.gather import Gather

from .notices import S, effect, lock


async def later(into: Gather, seconds: float, *notices: Notice) -> None:
    await asyncio.sleep(seconds)
    for notice in notices:
        into.add(notice)


def keys(notices: list[Notice]) -> list[str]:
    return [n.data["key"].rsplit(":", 1)[-1] for n in notices]


async def test_an_action_is_one_batch_from_its_lock_to_its_release() -> None:
    batch = Gather()
    batch.add(lock("set"))
    # the action's writes come in over a few round trips, the release last
    feeding = asyncio.gather(later(batch, 0.002, effect("active")), later(batch, 0.004, effect("job:A")),
                             later(batch, 0.006, lock("del")))
    closed = await batch.closed()
    await feeding
    assert keys(closed) == ["lock", "active", "A", "lock"]


async def test_an_action_that_outlasts_the_window_is_still_read_once_at_its_end() -> None:
    batch = Gather()
    batch.add(lock("set"))
    slow = gather.COALESCE_SECONDS * 2
    feeding = asyncio.gather(later(batch, slow, effect("active")), later(batch, slow + 0.002, lock("del")))
    closed = await batch.closed()
    await feeding
    assert [n.kind for n in closed] == ["lock", "effect", "lock"]


async def test_writes_outside_an_action_are_gathered_for_the_window() -> None:
    batch = Gather()
    batch.add(effect("first"))
    feeding = asyncio.create_task(later(batch, gather.COALESCE_SECONDS / 3, effect("note")))
    closed = list(await batch.closed())
    await feeding
    assert keys(closed) == ["first", "note"]


async def test_a_lock_taken_inside_the_window_holds_the_batch_until_its_release() -> None:
    batch = Gather()
    batch.add(effect("console"))
    feeding = asyncio.gather(later(batch, gather.COALESCE_SECONDS / 3, lock("set")),
                             later(batch, gather.COALESCE_SECONDS * 2, effect("active"), lock("del")))
    closed = await batch.closed()
    await feeding
    assert keys(closed) == ["console", "lock", "active", "lock"]


async def test_a_release_seen_without_its_start_ends_the_batch_at_once() -> None:
    batch = Gather()
    batch.add(lock("del"))
    closed = await asyncio.wait_for(batch.closed(), timeout=gather.COALESCE_SECONDS / 2)
    assert [n.kind for n in closed] == ["lock"]


async def test_a_batch_reaches_each_page_once_composed_once_per_widget_list() -> None:
    fan = Fanout()
    composed: list[tuple[str, ...]] = []

    def composer(names: tuple[str, ...]):  # type: ignore[no-untyped-def]
        async def compose(batch: Batch) -> bytes:
            composed.append(names)
            await asyncio.sleep(0.001)  # the snapshot read
            return f"{'+'.join(names)}:{len(batch.notices)}".encode()
        return compose

    async with contextlib.AsyncExitStack() as stack:
        pages = [await stack.enter_async_context(fan.listen(S, ("fanin",), composer(("fanin",))))
                 for _ in range(300)]
        pages += [await stack.enter_async_context(fan.listen(S, ("fanin", "outbox"), composer(("fanin", "outbox"))))
                  for _ in range(200)]
        for notice in (lock("set"), effect("active"), effect("job:A"), lock("del")):
            fan.broadcast(notice, S)
        assert all(page.queue.empty() for page in pages)  # nobody wakes before the batch closes
        got = [[await asyncio.wait_for(page.queue.get(), timeout=2), *page.drain()] for page in pages]
        assert sorted(composed) == [("fanin",), ("fanin", "outbox")]
        assert all(len(items) == 1 and isinstance(items[0], Delivery) for items in got)
        assert {items[0].chunk for items in got[:300]} == {b"fanin:4"}  # type: ignore[union-attr]
        assert {items[0].chunk for items in got[300:]} == {b"fanin+outbox:4"}  # type: ignore[union-attr]


async def test_batches_of_one_sandbox_reach_a_page_in_the_order_they_closed() -> None:
    fan = Fanout()
    delays = iter([0.03, 0.0])  # the first batch's read is the slower one

    async def compose(batch: Batch) -> bytes:
        await asyncio.sleep(next(delays))
        return keys(batch.notices)[-1].encode()

    async with fan.listen(S, ("fanin",), compose) as page:
        fan.broadcast(lock("del"), S)  # closes at once
        await asyncio.sleep(0.005)
        fan.broadcast(effect("later"), S)  # the next batch, closed 15 ms on
        await asyncio.sleep(0.08)
        assert [item.chunk for item in page.drain()] == [b"lock", b"later"]  # type: ignore[union-attr]


async def test_a_page_without_a_composer_gets_the_batchs_notices_one_by_one() -> None:
    fan = Fanout()
    async with fan.listen(S) as page:
        fan.broadcast(lock("del"), S)
        await asyncio.sleep(0.01)
        assert [n.kind for n in page.drain()] == ["lock"]  # type: ignore[union-attr]
