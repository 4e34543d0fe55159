"""When a batch may show an action's own snapshot instead of reading the keys
again (server/live/answers.py), and how an answer waits for its batch."""

from __future__ import annotations

import asyncio
import contextlib

from server.live import answers, heartbeat
from server.live.answers import answering, offered, proven
from server.live.fanout import Batch, Fanout
from server.live.hub import Hub
from server.live.nodes import patterns_of
from server.widgets import WIDGETS

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


def opened(fanout: Fanout) -> int:
    """The sandbox's next batch opened (its first notice), and its number."""
    fanout.broadcast(effect("opening"), S)
    return fanout.gathers[S].number


async def test_the_marked_batchs_snapshot_is_the_actions_own() -> None:
    fanout = Fanout()
    async with followed(fanout):
        assert fanout.batch_mark(S) == 0  # no batch open: the next one
        async with answering(fanout, S, W, True) as mine:
            number = opened(fanout)
            assert mine.mark == number  # numbered when it opened
            notices = [lock("set"), effect("active"), lock("del")]
            mine.offer({"ver": 7})
            assert await offered(fanout, Batch(notices, S, number), W, notices) == {"ver": 7}
            # another batch, or one the rule does not prove, reads its own
            assert await offered(fanout, Batch(notices, S, number + 1), W, notices) is None
            late = [*notices, effect("after")]
            assert await offered(fanout, Batch(late, S, number), W, late) is None
            assert await offered(fanout, Batch(notices, S, number), "tree", notices) is None  # another widget
        assert fanout.answers == {}


async def test_a_mark_made_before_a_break_in_what_the_hub_hears_is_taken_by_no_batch() -> None:
    fanout = Fanout()
    async with followed(fanout), answering(fanout, S, W, True) as mine:
        number = opened(fanout)
        notices = [lock("set"), lock("del")]
        mine.offer({"ver": 9})
        fanout.epoch += 1  # e.g. the subscription was lost and made anew: the action's notices may be gone
        assert await offered(fanout, Batch(notices, S, number), W, notices) is None


async def test_batch_numbers_are_never_reused_when_a_sandboxs_pages_close_and_open_again() -> None:
    fanout = Fanout()
    async with followed(fanout), answering(fanout, S, W, True) as mine:
        first = opened(fanout)
        assert mine.mark == first
        fanout.gathers.clear()
    async with followed(fanout), answering(fanout, S, W, True) as later:
        assert later.mark == 0
        assert opened(fanout) > first and later.mark > first


async def test_a_batch_waits_a_moment_for_an_offer_then_reads_its_own() -> None:
    fanout = Fanout()
    async with followed(fanout):
        notices = [lock("set"), lock("del")]
        async with answering(fanout, S, W, True) as mine:
            number = opened(fanout)
            asyncio.get_running_loop().call_later(answers.OFFER_WAIT_SECONDS / 4, mine.offer, {"ver": 8})
            assert await offered(fanout, Batch(notices, S, number), W, notices) == {"ver": 8}
        async with answering(fanout, S, W, True) as never:
            assert never.mark == number  # the batch is still open
            assert await offered(fanout, Batch(notices, S, number), W, notices) is None  # no offer in the wait
        async with answering(fanout, S, W, True) as refused:
            refused.withdraw()
            assert await offered(fanout, Batch(notices, S, number), W, notices) is None


async def test_the_first_snapshot_offered_is_taken_whichever_action_marked_first() -> None:
    fanout = Fanout()
    async with followed(fanout), answering(fanout, S, W, True) as waiting, \
            answering(fanout, S, W, True) as done:
        number = opened(fanout)
        assert waiting.mark == done.mark == number
        done.offer({"ver": 11})  # the other is still queued behind the lock
        notices = [lock("set"), lock("del")]
        started = asyncio.get_running_loop().time()
        assert await offered(fanout, Batch(notices, S, number), W, notices) == {"ver": 11}
        assert asyncio.get_running_loop().time() - started < answers.OFFER_WAIT_SECONDS


async def test_a_batch_works_out_its_offer_once_for_every_page_group() -> None:
    fanout = Fanout()
    async with followed(fanout), answering(fanout, S, W, True):
        number = opened(fanout)
        notices = [lock("set"), lock("del")]
        batch = Batch(notices, S, number)
        assert await offered(fanout, batch, W, notices) is None  # waited once, nothing came
        assert batch.offers == {W: None}
        # the next page group takes the answer worked out, without a wait of its own
        assert await asyncio.wait_for(offered(fanout, batch, W, notices), answers.OFFER_WAIT_SECONDS / 10) is None


async def test_nothing_is_offered_without_a_page_several_queues_or_notifications() -> None:
    fanout = Fanout()
    async with answering(fanout, S, W, True) as mine:
        assert mine.fanout is None  # no page of the sandbox is open here
        assert await mine.handed_on() is False
    async with followed(fanout):
        async with answering(fanout, S, W, False) as mine:  # several queues, or notices unheard
            assert mine.fanout is None
        assert fanout.answers == {}


async def test_an_answer_waits_until_its_batch_reached_the_pages() -> None:
    fanout = Fanout()

    async def compose(batch: Batch) -> bytes:
        return b"chunk"

    async with fanout.listen(S, (W,), compose) as sub:
        async with answering(fanout, S, W, True) as mine:
            waiting = asyncio.create_task(mine.handed_on())
            await asyncio.sleep(0)
            assert not waiting.done()
            fanout.broadcast(lock("set"), S)
            fanout.broadcast(lock("del"), S)
            assert await asyncio.wait_for(waiting, 1) is True
            assert (await sub.queue.get()).chunk == b"chunk"  # type: ignore[union-attr]
            assert mine.mark > 0  # the batch its lock's notices opened
        assert fanout.batch_mark(S) == 0  # a later action marks the sandbox's next batch


async def test_an_answer_does_not_wait_past_its_bound_or_its_last_page() -> None:
    fanout = Fanout()
    async with followed(fanout), answering(fanout, S, W, True) as mine:
        assert await mine.handed_on() is False  # no batch came: the bound
        waiting = asyncio.create_task(mine.handed_on())
        await asyncio.sleep(0)
    assert await asyncio.wait_for(waiting, 1) is False  # the page closed


def test_the_hub_follows_a_sandbox_once_valkey_confirmed_its_patterns_and_counts_breaks() -> None:
    hub = Hub("redis://127.0.0.1:9")
    hub.up = hub.notifications_on = True
    hub.subs[S] = set()  # a page of the sandbox is open
    assert not hub.follows(S)  # its PSUBSCRIBE not confirmed yet: notices may go unheard
    first, last = patterns_of(S)
    hub.dispatch({"type": "psubscribe", "channel": first, "data": 2}, "")
    assert not hub.follows(S)
    hub.dispatch({"type": "psubscribe", "channel": last, "data": 3}, "")
    assert hub.follows(S)
    before = hub.epoch
    hub.node_is_up("", True)  # a subscription made anew
    hub.judged("", heartbeat.RESTORED)  # notifications were off a while
    assert hub.epoch == before + 2
    hub.notifications_on = False
    assert not hub.follows(S)
    hub.notifications_on = True
    hub.dispatch({"type": "punsubscribe", "channel": last, "data": 1}, "")
    assert not hub.follows(S)


def test_only_widgets_of_one_queue_read_the_base_way_offer_their_answer() -> None:
    offering = {name for name, widget in WIDGETS.items() if widget.offers_answer()}
    # the ledger reads its own snapshot; outbox and failure policy span several queues
    assert offering == {"enqueue-stepper", "fanin", "native", "results", "tree"}
