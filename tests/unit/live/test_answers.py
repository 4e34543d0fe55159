"""When a batch may show an action's own snapshot instead of reading the keys
again (server/live/answers.py), and how an answer waits for its batch."""

from __future__ import annotations

import asyncio
import contextlib

from server.live import answers
from server.live.answers import answering, offered, proven
from server.live.fanout import Batch, Fanout

from .notices import S, effect, lock, state

W = "fanin"


def test_one_action_from_its_lock_to_its_release_is_proven() -> None:
    assert proven([lock("set"), lock("expire"), effect("active"), state(), lock("del")])
    # writes from outside the lock before the action are in its read too
    assert proven([effect("note"), lock("set"), effect("active"), lock("del")])


def test_a_write_after_the_release_two_actions_or_a_lapsed_lease_are_not() -> None:
    assert not proven([lock("set"), effect("active"), lock("del"), effect("after")])
    assert not proven([lock("set"), lock("del"), lock("set"), lock("del")])
    assert not proven([lock("set"), effect("active"), lock("expired")])
    assert not proven([effect("active"), lock("del")])  # its lock was taken in an earlier batch
    assert not proven([lock("set"), effect("active")])  # still running


@contextlib.asynccontextmanager
async def followed(fanout: Fanout) -> object:
    async with fanout.listen(S, (W,)) as sub:
        yield sub


async def test_the_marked_batchs_snapshot_is_the_actions_own() -> None:
    fanout = Fanout()
    async with followed(fanout):
        mark = fanout.batch_mark(S)
        assert mark == 1
        async with answering(fanout, S, W, True, True) as mine:
            notices = [lock("set"), effect("active"), lock("del")]
            batch = Batch(notices, S, 1)
            mine.offer({"ver": 7})
            assert await offered(fanout, batch, W, notices) == {"ver": 7}
            # another batch, or one the rule does not prove, reads its own
            assert await offered(fanout, Batch(notices, S, 2), W, notices) is None
            late = [*notices, effect("after")]
            assert await offered(fanout, Batch(late, S, 1), W, late) is None
        assert fanout.answers == {}


async def test_a_batch_waits_a_moment_for_an_offer_then_reads_its_own() -> None:
    fanout = Fanout()
    async with followed(fanout):
        notices = [lock("set"), lock("del")]
        async with answering(fanout, S, W, True, True) as mine:
            batch = Batch(notices, S, 1)
            asyncio.get_running_loop().call_later(answers.OFFER_WAIT_SECONDS / 4, mine.offer, {"ver": 8})
            assert await offered(fanout, batch, W, notices) == {"ver": 8}
        async with answering(fanout, S, W, True, True) as never:
            assert never.mark == 1
            assert await offered(fanout, batch, W, notices) is None  # no offer within the wait
        async with answering(fanout, S, W, True, True) as refused:
            refused.withdraw()
            assert await offered(fanout, batch, W, notices) is None


async def test_nothing_is_offered_without_a_page_several_queues_or_notifications() -> None:
    fanout = Fanout()
    async with answering(fanout, S, W, True, True) as mine:
        assert mine.fanout is None  # no page of the sandbox is open here
        assert await mine.handed_on() is False
    async with followed(fanout):
        for one_queue, following in ((False, True), (True, False)):
            async with answering(fanout, S, W, one_queue, following) as mine:
                assert mine.fanout is None
        assert fanout.answers == {}


async def test_an_answer_waits_until_its_batch_reached_the_pages() -> None:
    fanout = Fanout()

    async def compose(batch: Batch) -> bytes:
        return b"chunk"

    async with fanout.listen(S, (W,), compose) as sub:
        async with answering(fanout, S, W, True, True) as mine:
            waiting = asyncio.create_task(mine.handed_on())
            await asyncio.sleep(0)
            assert not waiting.done()
            fanout.broadcast(lock("set"), S)
            fanout.broadcast(lock("del"), S)
            assert await asyncio.wait_for(waiting, 1) is True
            assert (await sub.queue.get()).chunk == b"chunk"  # type: ignore[union-attr]
        # a later action marks the next batch
        assert fanout.batch_mark(S) == 2


async def test_an_answer_does_not_wait_past_its_bound_or_its_last_page() -> None:
    fanout = Fanout()
    async with followed(fanout), answering(fanout, S, W, True, True) as mine:
        assert await mine.handed_on() is False  # no batch came: the bound
        waiting = asyncio.create_task(mine.handed_on())
        await asyncio.sleep(0)
    assert await asyncio.wait_for(waiting, 1) is False  # the page closed
