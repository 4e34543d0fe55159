"""The live stream's listener: keyspace notifications in, changes out. One subscription per
Valkey primary, whoever is online (an action costs the same with 2,000 learners as with one);
on a drop it reconnects and resyncs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from server.emq.wire import Conn
from server.live import events, heartbeat, topology
from server.live.batches import Batches
from server.live.streams import Notice, Streams
from server.live.subscriber import Subscriber
from server.valkey.tasks import stop_tasks

log = logging.getLogger("emqlab.stream")

# every learner key, and the site's keys of a widget queue (`lab:{<sandbox>.<part>}:…`),
# not a sandbox's own records (`lab:{<sandbox>}:meta`), which no page draws
PATTERNS = ("__keyspace@*__:emq:{*", "__keyspace@*__:lab:{*.*}:*")
RECONNECT_EVERY = 0.25  # seconds between tries of a node that dropped
NOTIFICATIONS_OFF = (
    "Keyspace notifications are off on this Valkey and the site may not switch them on (CONFIG is refused): "
    "the widgets follow Valkey by reading it every 1.5 s, and the effects log stays empty.")
NOTIFICATIONS_RESTORED = ("Keyspace notifications had been switched off on Valkey; the site switched them on "
                          "again and redrew every widget from Valkey.")
MEMORY_FULL = "Valkey is out of memory: actions are refused until memory frees; the widgets show what Valkey holds."


class Hub:
    def __init__(self, url: str, streams: Streams, widget_of_queue: Callable[[str], str | None],
                 cluster: bool = False) -> None:
        self.url, self.streams, self.cluster = url, streams, cluster
        self.widget_of_queue = widget_of_queue
        self.batches = Batches(streams.deliver)
        self.nodes = topology.Nodes(url, cluster, self.subscriber, lambda: self.tell(resync=self.up))
        self.beats: dict[str, heartbeat.Heartbeat] = {}
        self.seen = events.Seen(512)
        self.notifications_on = False
        self.memory_full = False

    @property
    def up(self) -> bool:
        return self.nodes.up

    # -- what the streams are told ------------------------------------------------
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

    def tell(self, resync: bool, note: str | None = None) -> None:
        self.streams.broadcast(Notice("status", {**self.status(note), "resync": resync}))

    def judged(self, judgement: str) -> None:
        """A heartbeat's judgement: what the hub believes now, told to every stream."""
        beats = list(self.beats.values())
        self.memory_full = any(b.memory_full for b in beats)
        self.notifications_on = bool(beats) and all(b.notifications for b in beats)
        resync = judgement in (heartbeat.RESTORED, heartbeat.ON, heartbeat.MEMORY_OK)
        self.tell(resync, NOTIFICATIONS_RESTORED if judgement == heartbeat.RESTORED else None)

    # -- running ------------------------------------------------------------------
    async def start(self) -> None:
        await self.nodes.start()

    async def stop(self) -> None:
        await self.nodes.stop()
        await self.batches.stop()

    async def subscriber(self, url: str, node: str, ready: Callable[[bool], None]) -> None:
        """Subscribe on one node until cancelled, reconnecting on a drop."""
        while True:
            client: Conn = aioredis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=1,
                                                      driver_info=None)
            try:
                on = await heartbeat.enable_notifications(client)
                async with Subscriber(url) as sub:
                    await sub.subscribe(PATTERNS, [events.EVENTS_CHANNEL])
                    if not self.nodes.ready.get(node, True):
                        log.warning("valkey %s reachable again: the live stream follows it", node or "server")
                    ready(True)
                    await self.follow(sub, client, node, on)
            except (RedisError, OSError) as exc:
                if self.nodes.ready.get(node, True):  # once when it goes, not at every retry
                    log.warning("valkey %s unreachable for the live stream (%s): retrying", node or "server", exc)
            finally:
                with contextlib.suppress(Exception):
                    await client.aclose()
            ready(False)
            await asyncio.sleep(RECONNECT_EVERY)

    async def follow(self, sub: Subscriber, client: Conn, node: str, on: bool) -> None:
        """Hand on every message, and beat alongside; returns or raises when either stops."""
        beat = self.beats[node] = heartbeat.Heartbeat(client, self.judged, cluster=self.cluster, notifications=on)
        self.judged(heartbeat.ON if on else heartbeat.OFF)

        async def read() -> None:
            async for kind, channel, data in sub.messages():
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
        if kind == "pmessage":
            self.keyspace(channel, data, node)
        elif kind == "message" and channel == events.EVENTS_CHANNEL:
            self.lab_event(data)

    def keyspace(self, channel: str, event: str, node: str) -> None:
        """A key changed: a sandbox's (for its pages) or a heartbeat's."""
        key = channel.partition("__:")[2]
        if heartbeat.is_beat_key(key):
            beat = self.beats.get(node)
            if beat is not None:
                beat.seen()
            return
        end = key.find("}", 5)
        queue = key[5:end] if end > 0 else ""
        sandbox, dot, _ = queue.partition(".")
        if not dot or not self.streams.watched(sandbox):
            return
        widget = self.widget_of_queue(queue)
        if widget is not None:
            self.batches.notice(sandbox, widget, queue, key, event)

    def lab_event(self, raw: Any) -> None:
        """A reset or a class change: handed on once (a cluster delivers a PUBLISH through every node)."""
        event = events.decode(raw)
        if event is None or not self.seen.first(event.get("id")):
            return
        self.streams.broadcast(Notice(event["type"], event["data"]), event.get("sandboxes"))
