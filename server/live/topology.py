"""Which Valkey nodes the hub listens on (notifications are node-local: on a cluster each
online primary, from CLUSTER SHARDS every few seconds), one subscriber each; `up` when all are ready."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Iterable
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.emq.wire import Conn
from server.valkey.tasks import stop_tasks

log = logging.getLogger("emqlab.stream")

TOPOLOGY_EVERY = 3.0  # seconds between reads of a cluster's primaries

# (node url, node name, ready(bool)) -> runs until cancelled
Subscriber = Callable[[str, str, Callable[[bool], None]], Coroutine[Any, Any, None]]


def node_url(url: str, address: str) -> str:
    """The URL of one node: the site's URL (scheme, credentials) with that node's host:port."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    return parts._replace(netloc=f"{userinfo}@{address}" if userinfo else address, path="/0").geturl()


def online_primaries(shards: Iterable[Any]) -> list[str]:
    """"host:port" of every online primary in a CLUSTER SHARDS reply."""
    found = set()
    for shard in shards:
        for node in shard.get("nodes", []):
            if node.get("role") == "master" and node.get("health", "online") == "online":
                host = node.get("endpoint")
                host = node.get("ip") if host in (None, "", "?") else host
                found.add(f"{host}:{node['port']}")
    return sorted(found)


async def read_primaries(seeds: Iterable[str]) -> list[str]:
    """The online primaries, asked of each seed URL in turn until one answers."""
    last: Exception | None = None
    for seed in dict.fromkeys(seeds):
        client: Conn = aioredis.Redis.from_url(seed, decode_responses=True, socket_connect_timeout=1, socket_timeout=2,
                                                  driver_info=None)
        try:
            return online_primaries(await client.execute_command("CLUSTER SHARDS"))
        except (RedisError, OSError, AttributeError, TypeError) as exc:
            last = exc
        finally:
            with contextlib.suppress(Exception):
                await client.aclose()
    raise RedisError(f"no cluster node answered CLUSTER SHARDS: {last}")


class Nodes:
    """One subscriber task per node, and whether all of them are ready (`changed()` when that flips)."""

    def __init__(self, url: str, cluster: bool, subscriber: Subscriber, changed: Callable[[], None]) -> None:
        self.url, self.cluster, self.subscriber, self.changed = url, cluster, subscriber, changed
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.ready: dict[str, bool] = {}
        self.up = False
        self.follower: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self.cluster:
            self.follower = asyncio.create_task(self.follow_topology(), name="emqlab-topology")
        else:
            self.run("", self.url)

    def run(self, name: str, url: str) -> None:
        def ready(on: bool) -> None:
            self.ready[name] = on
            self.refresh()

        self.tasks[name] = asyncio.create_task(self.subscriber(url, name, ready), name=f"emqlab-hub-{name}")

    def refresh(self) -> None:
        live = [n for n, t in self.tasks.items() if not t.done()]
        up = bool(live) and all(self.ready.get(n, False) for n in live)
        if up != self.up:
            self.up = up
            self.changed()

    async def follow_topology(self) -> None:
        while True:
            try:
                wanted = await read_primaries([self.url, *(node_url(self.url, a) for a in self.tasks)])
            except (RedisError, OSError) as exc:
                log.info("cluster topology unreadable for the live stream: %s", exc)
                wanted = list(self.tasks)
            for gone in [a for a in self.tasks if a not in wanted]:
                self.tasks.pop(gone).cancel()
                self.ready.pop(gone, None)
            for address in wanted:
                task = self.tasks.get(address)
                if task is None or task.done():
                    self.run(address, node_url(self.url, address))
            self.refresh()
            await asyncio.sleep(TOPOLOGY_EVERY)

    async def stop(self) -> None:
        await stop_tasks([self.follower, *self.tasks.values()])
        self.tasks.clear()
