"""The live stream: keyspace notifications in, Server-Sent Events out.

One `Hub` per process holds ONE subscription per Valkey primary: the keys of
each sandbox some page watches (`nodes.patterns_of`: joined with its first
page, left with its last), the heartbeat and the lab's event channel. It
hands each notification to the streams of the sandbox named in the key's
hashtag (`server.live.fanout`): a thousand open pages cost one connection per
primary. On a cluster, notifications are node-local: the hub subscribes on
every primary and follows the topology (CLUSTER SHARDS), `up` when every
primary is subscribed. When a node goes away the hub says so, reconnects,
enables notifications again (a restarted server forgets them) and tells the
streams to resync. The lab's events (resets) travel by PUBLISH, which a
cluster broadcasts to every node: each carries an id, handed on once.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError

from server.emq.wire import Conn
from server.live import events, heartbeat, nodes
from server.live.events import EVENTS_CHANNEL, publish_reset
from server.live.fanout import Compose, Fanout, Notice, Status, Subscription
from server.live.heartbeat import Heartbeat
from server.live.nodes import enable_notifications, parse_channel

log = logging.getLogger("emqlab.stream")

TOPOLOGY_EVERY = 3.0  # seconds between reads of a cluster's primaries
RECONNECT_EVERY = 0.25  # seconds between tries of a node that dropped
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


class Hub(Fanout):
    """The process's listener on Valkey, fanning out to the open streams."""

    def __init__(self, url: str, cluster: bool = False) -> None:
        super().__init__()
        self.url = url
        self.cluster = cluster
        self.up = False
        self.notifications_on = False
        self.task: asyncio.Task[None] | None = None
        # On a cluster: "host:port" of each primary -> its subscriber task,
        # whether it is subscribed, whether its notifications are on.
        self.nodes: dict[str, asyncio.Task[None]] = {}
        self.node_up: dict[str, bool] = {}
        self.node_notifications: dict[str, bool] = {}
        self.seen = events.Seen(SEEN_EVENTS)
        # One heartbeat per node listened on ("" on one server): see heartbeat.py.
        self.beats: dict[str, Heartbeat] = {}
        self.memory_full = False
        # Each node's subscription ("" on one server): see `listen`.
        self.pubsubs: dict[str, PubSub] = {}
        # Per node, the sandboxes whose patterns Valkey confirmed on the
        # subscription open now: their every notice reaches the hub (`follows`).
        self.confirmed: dict[str, set[str]] = {}

    @contextlib.asynccontextmanager
    async def listen(self, sandbox: str, names: tuple[str, ...] = (),
                     compose: Compose | None = None) -> AsyncIterator[Subscription]:
        """A stream's inbox; the sandbox's keys followed while any page of it is open."""
        try:
            async with super().listen(sandbox, names, compose) as sub:
                if len(self.subs.get(sandbox, ())) == 1:
                    await self.follow_sandbox(sandbox, True)
                yield sub
        finally:  # a stream ends by cancellation too (the page went away)
            if sandbox not in self.subs:
                await self.follow_sandbox(sandbox, False)

    async def follow_sandbox(self, sandbox: str, on: bool) -> None:
        """(Un)subscribe the sandbox's patterns on every node subscribed now; a
        node that reconnects later subscribes whatever is watched then."""
        patterns = nodes.patterns_of(sandbox)
        for pubsub in list(self.pubsubs.values()):
            with contextlib.suppress(RedisError, OSError):
                await (pubsub.psubscribe(*patterns) if on else pubsub.punsubscribe(*patterns))

    # -- what the streams are told ----------------------------------------------

    def status(self, note: str | None = None) -> Status:
        """What a stream says about Valkey now: up or down, notifications, memory, in words."""
        if not self.up:
            return {"valkey": "down", "notifications": self.notifications_on}
        message = note or (MEMORY_FULL if self.memory_full else "") or (
            "" if self.notifications_on else NOTIFICATIONS_OFF)
        return {"valkey": "up", "notifications": self.notifications_on,
                "memory": "full" if self.memory_full else "ok", "message": message}

    def follows(self, sandbox: str) -> bool:
        """The hub hears every notice of the sandbox now: Valkey is up with
        notifications on, and every node listened on confirmed the sandbox's
        patterns (an action may then offer the stream its own snapshot,
        server/live/answers.py)."""
        if not (self.up and self.notifications_on) or sandbox not in self.subs:
            return False
        nodes_now = list(self.nodes) if self.cluster else [""]
        return bool(nodes_now) and all(sandbox in self.confirmed.get(node, ()) for node in nodes_now)

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
        self.epoch += 1  # notices may have gone unheard (or unmade) before this judgement
        resync = judgement in (heartbeat.RESTORED, heartbeat.ON, heartbeat.MEMORY_OK)
        note = NOTIFICATIONS_RESTORED if judgement == heartbeat.RESTORED else None
        self.broadcast(Notice("status", {**self.status(note), "resync": resync}))

    def set_up(self, up: bool) -> None:
        if up != self.up:
            self.up = up
            self.broadcast(Notice("status", {**self.status(), "resync": up}))

    # -- running ----------------------------------------------------------------

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
        await self.stop_batches()

    async def run(self) -> None:
        """One server: one subscriber on the URL's node."""
        await self.subscriber(self.url, "")

    async def run_node(self, address: str) -> None:
        """A cluster: the subscriber on one primary."""
        await self.subscriber(nodes.node_url(self.url, address), address)

    async def subscriber(self, url: str, node: str) -> None:
        """Subscribe on one node ("" names the one server); on a drop,
        reconnect and enable notifications on that node again."""
        while True:
            client: Conn = aioredis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=1)
            try:
                notifications = await enable_notifications(client)
                self.noted(node, notifications)
                async with client.pubsub() as pubsub:
                    self.pubsubs[node] = pubsub
                    self.confirmed[node] = set()
                    try:
                        await nodes.subscribe(pubsub, list(self.subs))
                        self.node_is_up(node, True)
                        await self.follow(pubsub, client, node, notifications)
                    finally:
                        if self.pubsubs.get(node) is pubsub:
                            self.pubsubs.pop(node, None)
                        self.confirmed.pop(node, None)  # the epoch moves in node_is_up below
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                log.info("valkey %s unreachable for the live stream: %s", node or "server", exc)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            self.node_is_up(node, False)
            await asyncio.sleep(RECONNECT_EVERY)

    def noted(self, node: str, notifications: bool) -> None:
        if self.cluster:
            self.node_notifications[node] = notifications
        else:
            self.notifications_on = notifications

    def node_is_up(self, node: str, up: bool) -> None:
        self.epoch += 1  # a subscription made anew, or lost
        if not self.cluster:
            self.set_up(up)
            return
        self.node_up[node] = up
        self.refresh_up()

    async def follow(self, pubsub: PubSub, client: Conn, node: str, notifications: bool) -> None:
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

    # -- a cluster: one subscriber per primary ----------------------------------

    async def primaries(self) -> list[str]:
        """"host:port" of every online primary, asked of the URL's node or, if
        it does not answer, of any primary known so far."""
        return await nodes.read_primaries([self.url, *(nodes.node_url(self.url, a) for a in self.nodes)])

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
                self.follow_topology(wanted)
                await asyncio.sleep(TOPOLOGY_EVERY)
        finally:
            for task in self.nodes.values():
                task.cancel()

    def follow_topology(self, wanted: list[str]) -> None:
        """Stop the subscribers of primaries gone, start those of primaries new."""
        for address in [a for a in self.nodes if a not in wanted]:
            self.nodes.pop(address).cancel()
            self.node_up.pop(address, None)
            self.node_notifications.pop(address, None)
        for address in wanted:
            task = self.nodes.get(address)
            if task is None or task.done():
                self.nodes[address] = asyncio.create_task(self.run_node(address), name=f"emqlab-hub-{address}")
        self.refresh_up()

    def refresh_up(self) -> None:
        live = [a for a in self.nodes if not self.nodes[a].done()]
        self.notifications_on = bool(live) and all(self.node_notifications.get(a, False) for a in live)
        self.set_up(bool(live) and all(self.node_up.get(a, False) for a in live))

    # -- messages in ------------------------------------------------------------

    def dispatch(self, message: dict[str, Any], node: str = "") -> None:
        kind = message.get("type")
        if kind == "pmessage":
            self.keyspace(message, node)
        elif kind == "message" and message.get("channel") == EVENTS_CHANNEL:
            self.lab_event(message)
        elif kind in ("psubscribe", "punsubscribe"):
            self.confirm(str(message.get("channel") or ""), node, kind == "psubscribe")

    def confirm(self, pattern: str, node: str, on: bool) -> None:
        """Valkey's answer to a (p)subscription: from the sandbox's last
        pattern confirmed on, every notice of it reaches this node's reader."""
        sandbox = nodes.sandbox_of_pattern(pattern)
        if sandbox is None:
            return
        confirmed = self.confirmed.setdefault(node, set())
        if on:
            confirmed.add(sandbox)
        else:
            confirmed.discard(sandbox)

    def keyspace(self, message: dict[str, Any], node: str) -> None:
        """A key of a sandbox changed (or a heartbeat key did): tell its streams."""
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
            kind = "effect" if not key.startswith("lab:") else "lock" if key.endswith(":lock") else "state"
            data = {"queue": queue, "key": key, "event": message["data"], "at": time.time()}
            self.broadcast(Notice(kind, data), sandbox)

    def lab_event(self, message: dict[str, Any]) -> None:
        """A reset or a class change, published by some worker: hand it on once
        (a cluster delivers a PUBLISH through every node this hub subscribes on)."""
        event = events.decode(message.get("data"))
        if event is None or not self.seen.first(event.get("id")):
            return
        targets = event.get("sandboxes")
        notice = Notice(event["type"], events.notice_data(event))
        for sandbox in [None] if targets is None else targets:
            self.broadcast(notice, sandbox)


# Imported from here by the app, the stream view and the reaper.
__all__ = ["EVENTS_CHANNEL", "MEMORY_FULL", "Hub", "enable_notifications", "publish_reset"]
