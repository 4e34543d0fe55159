"""The heartbeat: proof, every second, that keyspace notifications still arrive.

Switched off behind the site's back they fail nothing, streams fall silent; so the hub writes a key
it subscribes to. After `SILENCE` it switches them on again, reports "off" where CONFIG is refused,
or raises (to resubscribe); a write refused for memory reports it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from redis.exceptions import AskError, OutOfMemoryError, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError

from server.emq.wire import Conn
from server.valkey.process import NOTIFY_FLAGS

log = logging.getLogger("emqlab.stream")

BEAT_EVERY = 1.0  # seconds between beats
SILENCE = 5.0  # seconds without a beat's notification before notifications count as off
BEAT_TAG = "lab-heartbeat"
KEY_LIFETIME_MS = 10_000
# Judgements a heartbeat reports to its hub.
RESTORED, OFF, ON, OUT_OF_MEMORY, MEMORY_OK = "restored", "off", "on", "memory full", "memory ok"


def flags_on(flags: Any) -> bool:
    """Whether `notify-keyspace-events` flags include what the hub listens for."""
    flags = (flags.decode() if isinstance(flags, bytes) else flags) or ""
    return "K" in flags and ("A" in flags or {"g", "h", "z", "l", "$"} <= set(flags))


async def notifications_on(client: Conn) -> bool:
    """Whether the node's `notify-keyspace-events` include what the hub listens for."""
    found = await client.config_get("notify-keyspace-events")
    return flags_on(found.get("notify-keyspace-events", "") if isinstance(found, dict) else "")


async def enable_notifications(client: Conn) -> bool:
    """Switch keyspace notifications on for one node; False when CONFIG is refused."""
    try:
        if not await notifications_on(client):
            await client.config_set("notify-keyspace-events", NOTIFY_FLAGS)
        return True
    except RedisError as exc:
        # said once per subscription: the heartbeat reports the state to every page
        log.info("cannot enable keyspace notifications (%s): streams poll", exc)
        return False


def is_beat_key(key: str) -> bool:
    """True for a heartbeat key itself (`emq:{lab-heartbeat}:beat`, or `-N` on a cluster)."""
    return key.startswith("emq:{" + BEAT_TAG)


class Heartbeat:
    """Beats on one node (`client`) and judges what its notifications say."""

    def __init__(self, client: Conn, report: Callable[[str], None], cluster: bool = False,
                 notifications: bool = True) -> None:
        self.client = client
        self.report = report
        self.key: str | None = None if cluster else f"emq:{{{BEAT_TAG}}}:beat"
        self.last_seen = time.monotonic()
        # What the hub believes now; the first beat that comes back says "on".
        self.notifications = notifications
        self.memory_full = False

    def seen(self) -> None:
        """The hub got a beat's notification."""
        self.last_seen = time.monotonic()
        if not self.notifications:
            self.notifications = True
            self.report(ON)

    async def beat_key(self) -> str:
        """This node's heartbeat key (on a cluster, the first N whose slot the node holds)."""
        if self.key is not None:
            return self.key
        for n in range(2000):
            candidate = f"emq:{{{BEAT_TAG}-{n}}}:beat"
            try:
                await self.client.set(candidate, "1", px=KEY_LIFETIME_MS)
            except AskError:  # MOVED too: another node's slot
                continue
            self.key = candidate
            return candidate
        raise RedisError("no heartbeat key found for this node")

    async def write(self) -> bool:
        """One beat; False when Valkey refused it for memory."""
        try:
            key = await self.beat_key()
            # Always the same value: a DUMP of the keyspace stays the same from beat to beat.
            await self.client.set(key, "1", px=KEY_LIFETIME_MS)
        except OutOfMemoryError:
            if not self.memory_full:
                self.memory_full = True
                self.report(OUT_OF_MEMORY)
            return False
        except AskError:
            self.key = None  # the slot moved (MOVED is an AskError): find this node's key again
            return False
        if self.memory_full:
            self.memory_full = False
            self.report(MEMORY_OK)
        return True

    async def run(self) -> None:
        """Beat until cancelled; raises when the subscription is broken (the hub reconnects)."""
        self.last_seen = time.monotonic()
        while True:
            wrote = await self.write()
            slept = time.monotonic()
            await asyncio.sleep(BEAT_EVERY)
            # An overrun sleep is a busy worker, not silence: resubscribing would add load.
            late = time.monotonic() - slept > 2 * BEAT_EVERY
            if late:
                self.last_seen = max(self.last_seen, time.monotonic() - SILENCE / 2)
            elif wrote and time.monotonic() - self.last_seen > SILENCE:
                await self.judge_silence()

    async def judge_silence(self) -> None:
        try:
            if await notifications_on(self.client):
                raise RedisConnectionError("no heartbeat notification although notifications are on: resubscribing")
            await self.client.config_set("notify-keyspace-events", NOTIFY_FLAGS)
        except ResponseError as exc:  # CONFIG refused
            if self.notifications:
                log.warning("keyspace notifications are off and may not be switched on (%s): streams poll", exc)
                self.notifications = False
                self.report(OFF)
            self.last_seen = time.monotonic()  # judge again after another silence
            return
        log.warning("keyspace notifications were switched off behind the site's back: switched on again")
        self.notifications = True
        self.last_seen = time.monotonic()
        self.report(RESTORED)
