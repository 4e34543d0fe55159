"""The hub's pure parts: which sandbox a notified key belongs to, the online
primaries of a CLUSTER SHARDS reply, and the per-sandbox fan-out with its
shared snapshot reads (server/live/nodes.py, server/live/fanout.py)."""

from __future__ import annotations

import asyncio

import pytest

from server.live.fanout import QUEUE_CAP, Fanout, Notice, Subscription
from server.live.nodes import _online_primaries, node_url, parse_channel


@pytest.mark.parametrize(("channel", "parsed"), [
    ("__keyspace@0__:emq:{s1.fanin}:job:JOBp", ("s1", "s1.fanin", "emq:{s1.fanin}:job:JOBp")),
    ("__keyspace@0__:lab:{s1.fanin}:state", ("s1", "s1.fanin", "lab:{s1.fanin}:state")),
    ("__keyspace@0__:emq:{fanin}:pending", None),  # no sandbox before a dot
    ("__keyspace@0__:emq:{s1.fanin:pending", None),  # no closing brace
    ("__keyspace@0__:other:{s1.fanin}", None),
])
def test_a_notified_key_names_its_sandbox_inside_its_hashtag(channel: str, parsed: tuple[str, ...] | None) -> None:
    assert parse_channel(channel) == parsed


def test_the_online_primaries_of_a_cluster_shards_reply_by_endpoint_else_ip() -> None:
    shards = [
        {"nodes": [{"role": "master", "endpoint": "10.0.0.2", "port": 7001, "health": "online"},
                   {"role": "replica", "endpoint": "10.0.0.3", "port": 7002, "health": "online"}]},
        {"nodes": [{"role": "master", "endpoint": "?", "ip": "10.0.0.1", "port": 7000}]},
        {"nodes": [{"role": "master", "endpoint": "10.0.0.4", "port": 7003, "health": "failed"}]},
    ]
    assert _online_primaries(shards) == ["10.0.0.1:7000", "10.0.0.2:7001"]


def test_a_node_url_keeps_the_sites_credentials_and_options() -> None:
    url = node_url("redis://user:pw@127.0.0.1:6379/0?socket_timeout=2", "10.0.0.9:7000")
    assert url == "redis://user:pw@10.0.0.9:7000/0?socket_timeout=2"


async def test_a_notice_reaches_only_its_sandboxs_streams_and_none_reaches_all() -> None:
    fan = Fanout()
    async with fan.listen("s1") as one, fan.listen("s2") as two:
        fan.broadcast(Notice("room", {"n": 1}), "s1")
        fan.broadcast(Notice("reset", {"n": 2}))
        assert [n.data["n"] for n in _drain(one)] == [1, 2]
        assert [n.data["n"] for n in _drain(two)] == [2]
    assert fan.subs == {}


async def test_a_stalled_stream_is_marked_for_a_resync_instead_of_growing() -> None:
    fan = Fanout()
    async with fan.listen("s1") as sub:
        for _ in range(QUEUE_CAP + 1):
            fan.broadcast(Notice("status"), "s1")
        assert sub.queue.qsize() == QUEUE_CAP and sub.overflowed


async def test_streams_of_one_sandbox_share_a_read_that_started_after_their_notice() -> None:
    fan = Fanout()
    calls = 0

    async def read() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return calls

    async with fan.listen("s1"):
        seen = Notice("effect").seen
        answers = await asyncio.gather(*(fan.shared_read(("s1", "fanin"), seen, read) for _ in range(5)))
        assert answers == [1] * 5 and calls == 1
        later = Notice("effect").seen  # a notice after that read started needs a new one
        assert await fan.shared_read(("s1", "fanin"), later, read) == 2


async def test_a_failed_read_is_not_shared_with_the_next_stream() -> None:
    fan = Fanout()

    async def broken() -> int:
        raise OSError("valkey went away")

    async def fine() -> int:
        return 7

    async with fan.listen("s1"):
        with pytest.raises(OSError):
            await fan.shared_read(("s1", "fanin"), 0.0, broken)
        assert await fan.shared_read(("s1", "fanin"), 0.0, fine) == 7


def _drain(sub: Subscription) -> list[Notice]:
    return [item for item in sub.drain() if isinstance(item, Notice)]
