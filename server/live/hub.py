"""The live stream: keyspace notifications in, Server-Sent Events out.

One `Hub` per process holds ONE pattern subscription per Valkey primary
(`__keyspace@*__:emq:*` and the lab's own event channel) and hands each
notification to the streams of the sandbox named inside the key's hashtag, so
a thousand open pages cost one Valkey connection per primary, not a thousand.
On one server that is one subscription. On a cluster, keyspace notifications
are node-local, so the hub subscribes on every primary and re-reads the
topology (CLUSTER SHARDS) every few seconds, starting and stopping
subscribers as primaries come and go; it is `up` when every primary is
subscribed. When a node goes away the hub says so to every stream,
reconnects on its own, enables keyspace notifications again (a restarted
server has forgotten them) and tells the streams to resync with a fresh
snapshot. The lab's events (resets) travel by PUBLISH, which a cluster
broadcasts to every node: each event carries an id and the hub hands it on
once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from server.emq.wire import Conn
from server.live import events, heartbeat
from server.live.events import EVENTS_CHANNEL
from server.live.heartbeat import NOTIFY_FLAGS, Heartbeat, flags_on

log = logging.getLogger("emqlab.stream")

KEYSPACE_PATTERN = "__keyspace@*__:emq:*"
# A widget's lab state (move, choices, last outcome): every open page follows it too.
STATE_PATTERN = "__keyspace@*__:lab:{*}:state"
TOPOLOGY_EVERY = 3.0  # seconds between reads of a cluster's primaries
NOTIFICATIONS_OFF = (
    "Keyspace notifications are off on this Valkey and the site may not switch them on (CONFIG is refused): "
    "the widgets follow Valkey by reading it every 1.5 s, and the effects log stays empty."
)
NOTIFICATIONS_RESTORED = (
    "Keyspace notifications had been switched off on Valkey; the site switched them on again "
    "and redrew every widget from Valkey."
)
MEMORY_FULL = (
    "Valkey is out of memory: actions are refused until memory frees, and the widgets show what Valkey holds."
)
SEEN_EVENTS = 512  # event ids remembered, to hand each cluster-broadcast event on once


_flags_on = flags_on


async def enable_notifications(conn: Conn) -> bool:
    """Turn keyspace notifications on; False when the server refuses CONFIG.

    On a cluster client: on EVERY primary (notifications are node-local)."""
    try:
        if isinstance(conn, RedisCluster):
            await conn.initialize()
            for node in conn.get_primaries():
                current = await conn.config_get("notify-keyspace-events", target_nodes=node)
                if not _flags_on(current.get("notify-keyspace-events", "") if isinstance(current, dict) else ""):
                    await conn.config_set("notify-keyspace-events", NOTIFY_FLAGS, target_nodes=node)
            return True
        current = await conn.config_get("notify-keyspace-events")
        if _flags_on(current.get("notify-keyspace-events", "") if isinstance(current, dict) else ""):
            return True
        await conn.config_set("notify-keyspace-events", NOTIFY_FLAGS)
        return True
    except RedisError as exc:
        log.warning("cannot enable keyspace notifications (%s): the effects log stays empty", exc)
        return False


@dataclass
class Notice:
    """One thing a stream must react to."""

    kind: str  # effect | status | reset | room
    data: dict[str, Any] = field(default_factory=dict)
    # When the hub received it (monotonic): a read that starts later sees it.
    seen: float = field(default_factory=time.monotonic)
    # The widget owning the effect's queue ("" for none) and its encoded event,
    # worked out once for every stream the notice goes to.
    owner: str | None = field(default=None, repr=False, compare=False)
    encoded: dict[str, str] = field(default_factory=dict, repr=False, compare=False)


class Subscription:
    def __init__(self, sandbox: str) -> None:
        self.sandbox = sandbox
        self.queue: asyncio.Queue[Notice] = asyncio.Queue(maxsize=2000)
        self.overflowed = False

    def push(self, notice: Notice) -> None:
        try:
            self.queue.put_nowait(notice)
        except asyncio.QueueFull:
            # A stalled client: drop, and resync it with a snapshot later.
            self.overflowed = True


def parse_channel(channel: str) -> tuple[str, str, str] | None:
    """`__keyspace@0__:emq:{s1.fanin}:job:X` -> (sandbox, queue, key); the
    same for a widget's lab state, `…:lab:{s1.fanin}:state`."""
    _, _, key = channel.partition("__:")
    if not key.startswith(("emq:{", "lab:{")):
        return None
    end = key.find("}", 5)
    if end < 0:
        return None
    queue = key[5:end]
    sandbox, dot, _ = queue.partition(".")
    if not dot:
        return None
    return sandbox, queue, key


class Hub:
    def __init__(self, url: str, cluster: bool = False) -> None:
        self.url = url
        self.cluster = cluster
        self.subs: dict[str, set[Subscription]] = {}
        self.up = False
        self.notifications_on = False
        self.task: asyncio.Task[None] | None = None
        # (sandbox, widget) -> (when the read started, the read): see shared_read.
        self.reads: dict[tuple[str, str], tuple[float, asyncio.Future[Any]]] = {}
        # On a cluster: "host:port" of each primary -> its subscriber task,
        # whether it is subscribed, whether its notifications are on.
        self.nodes: dict[str, asyncio.Task[None]] = {}
        self.node_up: dict[str, bool] = {}
        self.node_notifications: dict[str, bool] = {}
        self.seen_events: OrderedDict[str, None] = OrderedDict()
        # One heartbeat per node listened on ("" on one server): see heartbeat.py.
        self.beats: dict[str, Heartbeat] = {}
        self.memory_full = False

    def status(self, note: str | None = None) -> dict[str, Any]:
        """What a stream says about Valkey now: up or down, notifications, memory, in words."""
        if not self.up:
            return {"valkey": "down", "notifications": self.notifications_on}
        message = note or (MEMORY_FULL if self.memory_full else "") or (
            "" if self.notifications_on else NOTIFICATIONS_OFF)
        return {"valkey": "up", "notifications": self.notifications_on,
                "memory": "full" if self.memory_full else "ok", "message": message}

    def polling(self) -> bool:
        """Streams read snapshots on a timer while notifications cannot tell them of changes."""
        return self.up and not self.notifications_on

    def judged(self, node: str, judgement: str) -> None:
        """A heartbeat's judgement: update what the hub believes and tell every stream."""
        if judgement in (heartbeat.MEMORY_FULL, heartbeat.MEMORY_OK):
            self.memory_full = any(beat.memory_full for beat in self.beats.values())
        elif self.cluster:
            self.node_notifications[node] = judgement != heartbeat.OFF
            self.notifications_on = all(self.node_notifications.get(a, False) for a in self.nodes)
        else:
            self.notifications_on = judgement != heartbeat.OFF
        resync = judgement in (heartbeat.RESTORED, heartbeat.ON, heartbeat.MEMORY_OK)
        note = NOTIFICATIONS_RESTORED if judgement == heartbeat.RESTORED else None
        self.broadcast(Notice("status", {**self.status(note), "resync": resync}))

    async def follow(self, pubsub: Any, client: Conn, node: str, notifications: bool) -> None:
        """Hand on every message, and beat alongside; returns or raises when either stops."""
        beat = self.beats[node] = Heartbeat(
            client, lambda judgement: self.judged(node, judgement), cluster=self.cluster, notifications=notifications,
        )

        async def read() -> None:
            async for message in pubsub.listen():
                self.dispatch(message, node)

        tasks = [asyncio.create_task(read()), asyncio.create_task(beat.run())]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            if self.beats.get(node) is beat:
                self.beats.pop(node, None)

    async def start(self) -> None:
        runner = self.run_cluster() if self.cluster else self.run()
        self.task = asyncio.create_task(runner, name="emqlab-hub")

    async def stop(self) -> None:
        tasks = [t for t in (self.task, *self.nodes.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.nodes.clear()

    @contextlib.asynccontextmanager
    async def listen(self, sandbox: str) -> AsyncIterator[Subscription]:
        sub = Subscription(sandbox)
        self.subs.setdefault(sandbox, set()).add(sub)
        try:
            yield sub
        finally:
            group = self.subs.get(sandbox)
            if group is not None:
                group.discard(sub)
                if not group:
                    self.subs.pop(sandbox, None)
                    for key in [k for k in self.reads if k[0] == sandbox]:
                        self.reads.pop(key, None)

    async def shared_read(self, key: tuple[str, str], since: float, read: Callable[[], Awaitable[Any]]) -> Any:
        """One snapshot read for every stream of a sandbox that needs it.

        A stream needs a read of `key` that started after `since` (when the
        hub received the last notification the stream reacts to): such a read
        sees every write that notification announced. A read in flight or done
        that started at or after `since` is shared; otherwise a new one starts.
        A thousand pages on one sandbox then cost one read per change, not a
        thousand. A failed read is not kept: the next stream tries afresh.
        """
        entry = self.reads.get(key)
        if entry is None or entry[0] < since:
            started = time.monotonic()
            future = asyncio.ensure_future(read())

            def forget(done: asyncio.Future[Any], key: tuple[str, str] = key) -> None:
                failed = done.cancelled() or done.exception() is not None
                if failed and self.reads.get(key, (0.0, None))[1] is done:
                    self.reads.pop(key, None)

            future.add_done_callback(forget)
            entry = (started, future)
            if key[0] in self.subs:
                self.reads[key] = entry
        if entry[1].done():
            return entry[1].result()
        # shielded: a stream that goes away must not cancel the others' read
        return await asyncio.shield(entry[1])

    def broadcast(self, notice: Notice, sandbox: str | None = None) -> None:
        groups = [self.subs.get(sandbox, set())] if sandbox else list(self.subs.values())
        for group in groups:
            for sub in list(group):
                sub.push(notice)

    def set_up(self, up: bool) -> None:
        if up != self.up:
            self.up = up
            self.broadcast(Notice("status", {**self.status(), "resync": up}))

    async def run(self) -> None:
        """One server: one subscriber on the URL's node."""
        while True:
            client = aioredis.Redis.from_url(self.url, decode_responses=True, socket_connect_timeout=1)
            try:
                self.notifications_on = await enable_notifications(client)
                async with client.pubsub() as pubsub:
                    await pubsub.psubscribe(KEYSPACE_PATTERN, STATE_PATTERN)
                    await pubsub.subscribe(EVENTS_CHANNEL)
                    self.set_up(True)
                    await self.follow(pubsub, client, "", self.notifications_on)
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                log.info("valkey unreachable for the live stream: %s", exc)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            self.set_up(False)
            await asyncio.sleep(0.25)

    # -- a cluster: one subscriber per primary ----------------------------------

    def node_url(self, address: str) -> str:
        """The URL of one node: the site's URL (scheme, credentials, options)
        with that node's host:port."""
        parts = urlsplit(self.url)
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{address}" if userinfo else address
        return parts._replace(netloc=netloc, path="/0").geturl()

    def node_client(self, address: str) -> aioredis.Redis:
        return aioredis.Redis.from_url(
            self.node_url(address), decode_responses=True, socket_connect_timeout=1
        )

    async def primaries(self) -> list[str]:
        """"host:port" of every online primary, asked of the URL's node or, if
        it does not answer, of any primary known so far (the URL's node may be
        the one that left)."""
        last: Exception | None = None
        for seed in dict.fromkeys([self.url, *(self.node_url(a) for a in self.nodes)]):
            client: Conn = aioredis.Redis.from_url(
                seed, decode_responses=True, socket_connect_timeout=1, socket_timeout=2
            )
            try:
                found = set()
                for shard in await client.execute_command("CLUSTER SHARDS"):
                    for node in shard.get("nodes", []):
                        if node.get("role") == "master" and node.get("health", "online") == "online":
                            host = node.get("endpoint")
                            if host in (None, "", "?"):
                                host = node.get("ip")
                            found.add(f"{host}:{node['port']}")
                return sorted(found)
            except (RedisError, OSError, AttributeError, TypeError) as exc:
                last = exc
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
        raise RedisError(f"no cluster node answered CLUSTER SHARDS: {last}")

    async def run_cluster(self) -> None:
        """Follow the topology: a subscriber per primary, started and stopped
        as primaries come and go."""
        try:
            while True:
                try:
                    wanted = await self.primaries()
                except asyncio.CancelledError:
                    raise
                except (RedisError, OSError) as exc:
                    log.info("cluster topology unreadable for the live stream: %s", exc)
                    wanted = list(self.nodes)  # keep trying the ones we know
                for address in [a for a in self.nodes if a not in wanted]:
                    self.nodes.pop(address).cancel()
                    self.node_up.pop(address, None)
                    self.node_notifications.pop(address, None)
                for address in wanted:
                    task = self.nodes.get(address)
                    if task is None or task.done():
                        self.nodes[address] = asyncio.create_task(
                            self.run_node(address), name=f"emqlab-hub-{address}"
                        )
                self.refresh_up()
                await asyncio.sleep(TOPOLOGY_EVERY)
        finally:
            for task in self.nodes.values():
                task.cancel()

    async def run_node(self, address: str) -> None:
        """Subscribe on one primary; on a drop, reconnect and enable
        notifications on that node again."""
        while True:
            client = self.node_client(address)
            try:
                self.node_notifications[address] = await enable_notifications(client)
                async with client.pubsub() as pubsub:
                    await pubsub.psubscribe(KEYSPACE_PATTERN, STATE_PATTERN)
                    await pubsub.subscribe(EVENTS_CHANNEL)
                    self.node_up[address] = True
                    self.refresh_up()
                    await self.follow(pubsub, client, address, self.node_notifications[address])
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                log.info("valkey node %s unreachable for the live stream: %s", address, exc)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            self.node_up[address] = False
            self.refresh_up()
            await asyncio.sleep(0.25)

    def refresh_up(self) -> None:
        live = [a for a in self.nodes if not self.nodes[a].done()]
        self.notifications_on = bool(live) and all(self.node_notifications.get(a, False) for a in live)
        self.set_up(bool(live) and all(self.node_up.get(a, False) for a in live))

    def first_time(self, event_id: Any) -> bool:
        """False for an event already handed on (a cluster delivers a PUBLISH
        through every node this hub subscribes on)."""
        if not isinstance(event_id, str):
            return True
        if event_id in self.seen_events:
            return False
        self.seen_events[event_id] = None
        while len(self.seen_events) > SEEN_EVENTS:
            self.seen_events.popitem(last=False)
        return True

    def dispatch(self, message: dict[str, Any], node: str = "") -> None:
        kind = message.get("type")
        if kind == "pmessage":
            if heartbeat.is_beat(message["channel"]):
                beat = self.beats.get(node)
                if beat is not None:
                    beat.seen()
                return
            parsed = parse_channel(message["channel"])
            if parsed is None:
                return
            sandbox, queue, key = parsed
            if sandbox in self.subs:
                kind = "state" if key.startswith("lab:") else "effect"
                self.broadcast(
                    Notice(kind, {"queue": queue, "key": key, "event": message["data"], "at": time.time()}),
                    sandbox,
                )
        elif kind == "message" and message.get("channel") == EVENTS_CHANNEL:
            try:
                event = json.loads(message["data"])
            except (TypeError, ValueError):
                return
            if not self.first_time(event.get("id")):
                return
            if event.get("type") in events.KINDS:
                targets = event.get("sandboxes")
                notice = Notice(event["type"], events.notice_data(event))
                if targets is None:
                    self.broadcast(notice)
                else:
                    for sandbox in targets:
                        self.broadcast(notice, sandbox)


async def publish_reset(conn: Conn, sandboxes: list[str] | None, by: str = "instructor") -> None:
    """Tell every worker's hub that these sandboxes (None: all) were reset."""
    await events.publish(conn, "reset", sandboxes, {"by": by})
