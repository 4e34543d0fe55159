"""The live stream's listener: keyspace notifications in, changes out. One subscription per
Valkey primary, whoever is online (an action costs the same with 2,000 learners as with one);
on a drop it reconnects and resyncs. Notifications are node-local: on a cluster each online
primary (from CLUSTER SHARDS every few seconds) is followed; `up` when every one is ready.

Every sandbox write is a message to every worker; redis-py's `PubSub` spent ~7 µs of its own
on each (a tenth of an action's CPU), so messages are read in bulk and parsed by
`hiredis.Reader` (`subscribed`). Only AUTH and the subscribe commands are sent.

The heartbeat (`heartbeat`) proves, every second, that notifications still arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.connection import SSLConnection, parse_url
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from server.emq.wire import Conn
from server.live import events
from server.live.heartbeat import MEMORY_OK, OFF, ON, RESTORED, Heartbeat, enable_notifications, is_beat_key
from server.live.streams import Batches, Notice, Streams
from server.valkey.client import stop_tasks

log = logging.getLogger("emqlab.stream")

# every learner key, and the site's keys of a widget queue (`lab:{<sandbox>.<part>}:…`),
# not a sandbox's own records (`lab:{<sandbox>}:meta`), which no page draws
PATTERNS = ("__keyspace@*__:emq:{*", "__keyspace@*__:lab:{*.*}:*")
RECONNECT_EVERY = 0.25  # seconds between tries of a node that dropped
TOPOLOGY_EVERY = 3.0  # seconds between reads of a cluster's primaries
CONNECT_TIMEOUT = 1.0  # seconds; as the site's own pool (server/valkey/client.py)
READ_BYTES = 1 << 16
NOTIFICATIONS_OFF = (
    "Keyspace notifications are off on this Valkey and the site may not switch them on (CONFIG is refused): "
    "the widgets follow Valkey by reading it every 1.5 s, and the effects log stays empty.")
NOTIFICATIONS_RESTORED = ("Keyspace notifications had been switched off on Valkey; the site switched them on "
                          "again and redrew every widget from Valkey.")
UNREACHABLE = "Valkey is unreachable right now; the widget will recover when it returns."
MEMORY_FULL = "Valkey is out of memory: actions are refused until memory frees; the widgets show what Valkey holds."


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


@contextlib.asynccontextmanager
async def subscribed(url: str, patterns: Sequence[str],
                     channels: Sequence[str]) -> AsyncIterator[AsyncIterator[tuple[str, str, str]]]:
    """A connection of its own, subscribed once Valkey confirmed each pattern and channel (no message
    is missed after): its messages as (kind, channel, data), until it ends (ConnectionError)."""
    options: dict[str, Any] = dict(parse_url(url))
    reader = hiredis.Reader(encoding="utf-8", errors="surrogateescape")
    if "path" in options:
        opened = asyncio.open_unix_connection(options["path"])
    else:
        tls = ssl.create_default_context() if options.get("connection_class") is SSLConnection else None
        opened = asyncio.open_connection(options.get("host", "localhost"), options.get("port", 6379), ssl=tls)

    def send(*args: str) -> None:
        writer.write(hiredis.pack_command(args))  # type: ignore[arg-type]  # its stub types one argument

    async def reply() -> Any:
        while (found := reader.gets()) is False:
            data = await stream.read(READ_BYTES)
            if not data:
                raise RedisConnectionError("Valkey closed the subscription")
            reader.feed(data)
        if isinstance(found, hiredis.ReplyError):
            raise RedisConnectionError(f"Valkey refused the subscription: {found}")
        return found

    async def messages() -> AsyncIterator[tuple[str, str, str]]:
        while True:
            found = await reply()
            if isinstance(found, list) and found[0] == "pmessage" and len(found) == 4:
                yield "pmessage", found[2], found[3]
            elif isinstance(found, list) and found[0] == "message" and len(found) == 3:
                yield "message", found[1], found[2]

    async with asyncio.timeout(CONNECT_TIMEOUT):
        stream, writer = await opened
    try:
        if options.get("password"):
            async with asyncio.timeout(CONNECT_TIMEOUT):
                send("AUTH", *([options["username"]] if options.get("username") else []), options["password"])
                await reply()
        send("PSUBSCRIBE", *patterns)
        send("SUBSCRIBE", *channels)
        for _ in range(len(patterns) + len(channels)):
            await reply()
        yield messages()
    finally:
        writer.close()


class Hub:
    def __init__(self, url: str, streams: Streams, widget_of_queue: Callable[[str], str | None],
                 cluster: bool = False) -> None:
        self.url, self.streams, self.cluster = url, streams, cluster
        self.widget_of_queue = widget_of_queue
        self.batches = Batches(streams.deliver)
        self.tasks: dict[str, asyncio.Task[None]] = {}  # one subscriber per node ("" off a cluster)
        self.ready: dict[str, bool] = {}
        self.up = False
        self.follower: asyncio.Task[None] | None = None
        self.beats: dict[str, Heartbeat] = {}
        self.seen = events.Seen(512)
        self.notifications_on = False
        self.memory_full = False

    # -- what the streams are told ------------------------------------------------
    def status(self, note: str | None = None) -> dict[str, Any]:
        """What a stream says about Valkey now: up or down, notifications, memory, in words."""
        if not self.up:
            return {"valkey": "down", "notifications": self.notifications_on, "message": UNREACHABLE}
        message = note or (MEMORY_FULL if self.memory_full else "") or (
            "" if self.notifications_on else NOTIFICATIONS_OFF)
        return {"valkey": "up", "notifications": self.notifications_on,
                "memory": "full" if self.memory_full else "ok", "message": message}

    def polling(self) -> bool:
        """Streams read snapshots on a timer while notifications cannot tell them of changes."""
        return self.up and not self.notifications_on

    def tell(self, resync: bool, note: str | None = None) -> None:
        self.streams.broadcast(Notice("status", {**self.status(note), "resync": resync}))

    def judged(self, judgement: str) -> None:
        """A heartbeat's judgement: what the hub believes now, told to every stream."""
        beats = list(self.beats.values())
        self.memory_full = any(b.memory_full for b in beats)
        self.notifications_on = bool(beats) and all(b.notifications for b in beats)
        resync = judgement in (RESTORED, ON, MEMORY_OK)
        self.tell(resync, NOTIFICATIONS_RESTORED if judgement == RESTORED else None)

    # -- the nodes followed -------------------------------------------------------
    async def start(self) -> None:
        if self.cluster:
            self.follower = asyncio.create_task(self.follow_topology(), name="emqlab-topology")
        else:
            self.run("", self.url)

    async def stop(self) -> None:
        await stop_tasks([self.follower, *self.tasks.values()])
        self.tasks.clear()
        await self.batches.stop()

    def run(self, node: str, url: str) -> None:
        self.tasks[node] = asyncio.create_task(self.subscriber(url, node), name=f"emqlab-hub-{node}")

    def set_ready(self, node: str, on: bool) -> None:
        self.ready[node] = on
        self.refresh()

    def refresh(self) -> None:
        """`up` when every live node's subscriber is ready; a flip is told to every stream."""
        live = [n for n, t in self.tasks.items() if not t.done()]
        up = bool(live) and all(self.ready.get(n, False) for n in live)
        if up != self.up:
            self.up = up
            self.tell(resync=up)

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

    async def subscriber(self, url: str, node: str) -> None:
        """Subscribe on one node until cancelled, reconnecting on a drop."""
        while True:
            client: Conn = aioredis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=1,
                                                      driver_info=None)
            try:
                on = await enable_notifications(client)
                async with subscribed(url, PATTERNS, [events.EVENTS_CHANNEL]) as messages:
                    if not self.ready.get(node, True):
                        log.warning("valkey %s reachable again: the live stream follows it", node or "server")
                    self.set_ready(node, True)
                    await self.follow(messages, client, node, on)
            except (RedisError, OSError) as exc:
                if self.ready.get(node, True):  # once when it goes, not at every retry
                    log.warning("valkey %s unreachable for the live stream (%s): retrying", node or "server", exc)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            self.set_ready(node, False)
            await asyncio.sleep(RECONNECT_EVERY)

    async def follow(self, messages: AsyncIterator[tuple[str, str, str]], client: Conn, node: str, on: bool) -> None:
        """Hand on every message, and beat alongside; returns or raises when either stops."""
        beat = self.beats[node] = Heartbeat(client, self.judged, cluster=self.cluster, notifications=on)
        self.judged(ON if on else OFF)

        async def read() -> None:
            async for kind, channel, data in messages:
                self.dispatch(kind, channel, data, node)

        tasks = [asyncio.create_task(read()), asyncio.create_task(beat.run())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            if self.beats.get(node) is beat:
                del self.beats[node]
            await stop_tasks(tasks)

    # -- messages in --------------------------------------------------------------
    def dispatch(self, kind: str, channel: str, data: str, node: str = "") -> None:
        """A key changed (a sandbox's, for its pages, or a heartbeat's), or a lab event came: a reset or
        a class change, handed on once (a cluster delivers a PUBLISH through every node)."""
        if kind == "message" and channel == events.EVENTS_CHANNEL:
            event = events.decode(data)
            if event is not None and self.seen.first(event.get("id")):
                self.streams.broadcast(Notice(event["type"], event["data"]), event.get("sandboxes"))
            return
        if kind != "pmessage":
            return
        key = channel.partition("__:")[2]
        if is_beat_key(key):
            if (beat := self.beats.get(node)) is not None:
                beat.seen()
            return
        end = key.find("}", 5)
        queue = key[5:end] if end > 0 else ""
        sandbox, dot, _ = queue.partition(".")
        if dot and sandbox in self.streams.subs and (widget := self.widget_of_queue(queue)) is not None:
            self.batches.notice(sandbox, widget, queue, key, data)
