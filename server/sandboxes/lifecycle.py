"""Sandbox lifecycle: list, reset and expire sandboxes, from the site or a shell.

A sandbox is every key whose hashtag starts with its id. Resetting one runs
each widget's own Reset (the learner's kept choices stay, the scenario lands
again), removes the sandbox's other keys but who the learner is and how far
they got, and tells its open pages, which redraw at once. Idle sandboxes are
removed whole by the reaper, so no key lives forever. Every key of one
sandbox is found by name (`known_keys`), never by a scan of the keyspace, so
a reset or a removal costs the same however many other sandboxes there are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any, cast

from redis.exceptions import RedisError

from server.emq.wire import Conn, as_text
from server.live.hub import publish_reset
from server.sandboxes import admission, known_keys, rooms, site_scripts
from server.sandboxes.sandbox import REGISTRY_KEY, SANDBOX_RE, queue_name
from server.widgets import WIDGETS, snapshot
from server.widgets.base import Outcome

log = logging.getLogger("emqlab.lifecycle")


@dataclass
class SandboxInfo:
    id: str
    last_seen: float
    widget: str | None
    page: str | None = None
    room: str | None = None
    keys: int | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


meta_key = known_keys.meta_key
survives_reset = known_keys.survives_reset


async def list_sandboxes(conn: Conn, limit: int | None = None) -> list[SandboxInfo]:
    """Live sandboxes, most recent first (the `limit` most recent), with where
    each visitor last was and how many keys its widgets hold (the count each
    widget's last action recorded in its lab state)."""
    # ZRANGE … WITHSCORES answers (member, score) pairs
    rows = cast(list[tuple[Any, float]],
                await conn.zrange(REGISTRY_KEY, 0, -1 if limit is None else limit - 1, withscores=True, desc=True))
    ids = [as_text(member) for member, _ in rows]
    replies: list[Any] = []
    if ids:
        async with conn.pipeline(transaction=False) as pipe:
            for sid in ids:
                pipe.hgetall(meta_key(sid))
                for widget in WIDGETS.values():
                    pipe.hget(snapshot.state_key(queue_name(sid, *widget.queue_parts[0])), "keys")
            replies = await pipe.execute()
    by_room = await rooms.room_sandboxes(conn)
    infos = []
    step = 1 + len(WIDGETS)
    for i, (member, score) in enumerate(rows):
        sid = as_text(member)
        meta = {as_text(k): as_text(v) for k, v in replies[i * step].items()}
        recorded = [as_text(v) for v in replies[i * step + 1:(i + 1) * step] if v is not None]
        counts = [int(v) for v in recorded if v.isdigit()]
        infos.append(SandboxInfo(
            sid, score / 1000.0, meta.get("widget"), meta.get("page"), by_room.get(sid),
            sum(counts) if counts else None,
        ))
    return infos


async def delete_sandbox_keys(conn: Conn, sandbox: str) -> int:
    """Remove every key of one sandbox, found by name (no scan): the number removed."""
    return await known_keys.delete(conn, sandbox)


def sandbox_of_key(name: str) -> str | None:
    """The sandbox a key belongs to (`emq:{<sid>.…}…`, `lab:{<sid>…}…`), if any."""
    for prefix in ("emq:{", "lab:{"):
        if name.startswith(prefix):
            sid = name[len(prefix):len(prefix) + 11]
            rest = name[len(prefix) + 11:len(prefix) + 12]
            if SANDBOX_RE.match(sid) and (rest == "." or (prefix == "lab:{" and rest == "}")):
                return sid
    return None


async def held_sandboxes(conn: Conn) -> list[str]:
    """Every sandbox that may hold keys: admission writes each one it admits."""
    return [as_text(m) for m in await conn.zrange(admission.HELD_KEY, 0, -1)]


async def is_live(conn: Conn, sandbox: str) -> bool:
    """A sandbox is live when it is registered or a room's."""
    if await conn.zscore(REGISTRY_KEY, sandbox) is not None:
        return True
    return sandbox in await rooms.room_sandboxes(conn)


RESETS_AT_ONCE = 8  # sandboxes an instructor's "reset all" resets side by side

RESET_TEXT = "Reset by the instructor: the starting scenario was landed again through the real scripts."


async def reset_sandbox(conn: Conn, sandbox: str) -> int:
    """Reset a sandbox the way each widget's own Reset does (under the widget's
    lock: the learner's `kept_on_reset` choices stay, the scenario lands again,
    and the outcome says the instructor reset it); every other key of the
    sandbox goes, except who the learner is and how far they got. The number
    of keys the sandbox held before (its meta and progress not counted).
    Every key is found by name, so the cost does not grow with other sandboxes."""
    return await known_keys.reset(conn, sandbox, Outcome(RESET_TEXT))


async def reset_sandboxes(conn: Conn, sandboxes: list[str] | None, by: str = "instructor") -> int:
    """Reset these sandboxes (None: every sandbox) and tell their pages.

    The sandboxes stay live (their visitors still hold their cookies): each
    widget lands its starting scenario again when it next shows, and an open
    page redraws at once.
    """
    if sandboxes is None:
        found = {as_text(m) for m in await conn.zrange(REGISTRY_KEY, 0, -1)}
        found |= set(await rooms.room_sandboxes(conn))
        found |= set(await held_sandboxes(conn))
        targets = sorted(found)
    else:
        for sandbox in sandboxes:
            if not SANDBOX_RE.match(sandbox):
                raise ValueError(f"not a sandbox id: {sandbox!r}")
        targets = sandboxes
    # side by side, a few at a time: a class's worth of sandboxes resets in
    # the time of a handful, and the connection pool is never drained
    gate = asyncio.Semaphore(RESETS_AT_ONCE)

    async def one(sandbox: str) -> int:
        async with gate:
            return await reset_sandbox(conn, sandbox)

    removed = sum(await asyncio.gather(*(one(s) for s in targets)))
    await publish_reset(conn, None if sandboxes is None else targets, by)
    return removed


async def expire_idle(conn: Conn, ttl_seconds: int) -> list[str]:
    cutoff = int((time.time() - ttl_seconds) * 1000)
    stale = [as_text(m) for m in await conn.zrangebyscore(REGISTRY_KEY, "-inf", cutoff)]
    # ZREM only a sandbox still as idle as when it was picked: one step.
    unregister = site_scripts.script(conn, "unregister_if_idle")
    gone = []
    for sandbox in stale:
        if not SANDBOX_RE.match(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
            continue
        if int(await unregister(keys=[REGISTRY_KEY], args=[sandbox, cutoff])):
            await delete_sandbox_keys(conn, sandbox)
            gone.append(sandbox)
    return gone


async def expire_rooms(conn: Conn) -> list[str]:
    """Rooms whose record expired: forget them and remove their sandboxes."""
    gone = []
    for code, sandbox in await rooms.expired(conn):
        if SANDBOX_RE.match(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
            await delete_sandbox_keys(conn, sandbox)
        gone.append(code)
    return gone


async def remove_orphans(conn: Conn) -> list[str]:
    """Keys of sandboxes that are no longer live (a lost registry entry, a
    write racing an expiry): removed, so no key lives forever."""
    # The held index less the registry, on the server (both share one slot);
    # a room's sandbox is live without a registry entry.
    candidates = [as_text(m) for m in await conn.zdiff([admission.HELD_KEY, REGISTRY_KEY])]
    in_rooms = set((await rooms.room_sandboxes(conn)).keys()) if candidates else set()
    orphans = []
    for sandbox in candidates:
        if sandbox in in_rooms:
            continue
        if not SANDBOX_RE.match(sandbox):
            await conn.zrem(admission.HELD_KEY, sandbox)
            continue
        await delete_sandbox_keys(conn, sandbox)
        orphans.append(sandbox)
    return orphans


async def reap(conn: Conn, ttl_seconds: int) -> dict[str, list[str]]:
    """One round of the reaper."""
    # Never-used entries of sandboxes idle past the TTL: the registry's go below.
    await admission.forget_unused(conn, int((time.time() - ttl_seconds) * 1000))
    return {
        "sandboxes": await expire_idle(conn, ttl_seconds),
        "rooms": await expire_rooms(conn),
        "orphans": await remove_orphans(conn),
    }


class Reaper:
    """Runs expire_idle every `every` seconds in the background."""

    def __init__(self, conn: Conn, ttl_seconds: int, every: float = 30.0) -> None:
        self.conn = conn
        self.ttl = ttl_seconds
        self.every = every
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.run(), name="emqlab-reaper")

    async def stop(self) -> None:
        if self.task:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    async def run(self) -> None:
        while True:
            try:
                done = await reap(self.conn, self.ttl)
                if any(done.values()):
                    log.info(
                        "reaper: expired %d idle sandboxes, %d rooms; removed %d orphans",
                        len(done["sandboxes"]), len(done["rooms"]), len(done["orphans"]),
                    )
            except (RedisError, OSError):
                pass  # Valkey away: try again next round
            except Exception:
                log.exception("reaper round failed")
            await asyncio.sleep(self.every)
