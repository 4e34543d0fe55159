"""Sandbox lifecycle: list, reset and expire sandboxes, from the site or a shell.

A sandbox is every key whose hashtag starts with its id. Resetting one runs
each widget's own Reset (the learner's kept choices stay, the scenario lands
again), removes the sandbox's other keys but who the learner is and how far
they got, and tells its open pages, which redraw at once. Idle sandboxes are
removed whole by the reaper, so no key lives forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

from redis.exceptions import RedisError

from server.sandboxes import admission, rooms, site_scripts
from server.sandboxes.sandbox import REGISTRY_KEY, SANDBOX_RE, key_patterns
from server.live.hub import publish_reset

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


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def meta_key(sandbox: str) -> str:
    return f"lab:{{{sandbox}}}:meta"


async def list_sandboxes(conn: Any, limit: int | None = None) -> list[SandboxInfo]:
    """Live sandboxes, most recent first (the `limit` most recent), with where
    each visitor last was."""
    rows = await conn.zrange(REGISTRY_KEY, 0, -1 if limit is None else limit - 1, withscores=True, desc=True)
    ids = [_text(member) for member, _ in rows]
    metas: list[dict[Any, Any]] = []
    if ids:
        async with conn.pipeline(transaction=False) as pipe:
            for sid in ids:
                pipe.hgetall(meta_key(sid))
            metas = await pipe.execute()
    by_room = await rooms.room_sandboxes(conn)
    infos = []
    for (member, score), raw in zip(rows, metas):
        sid = _text(member)
        meta = {_text(k): _text(v) for k, v in raw.items()}
        counts = [int(v) for k, v in meta.items() if k.startswith("keys:") and v.isdigit()]
        infos.append(SandboxInfo(
            sid, score / 1000.0, meta.get("widget"), meta.get("page"), by_room.get(sid),
            sum(counts) if counts else None,
        ))
    return infos


async def delete_sandbox_keys(conn: Any, sandbox: str) -> int:
    if not SANDBOX_RE.match(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    removed = 0
    for pattern in key_patterns(sandbox):
        names = [n async for n in conn.scan_iter(match=pattern, count=1000)]
        # One DEL per key: the keys of one sandbox span several hashtags (slots).
        for name in names:
            removed += int(await conn.delete(name))
    return removed


def sandbox_of_key(name: str) -> str | None:
    """The sandbox a key belongs to (`emq:{<sid>.…}…`, `lab:{<sid>…}…`), if any."""
    for prefix in ("emq:{", "lab:{"):
        if name.startswith(prefix):
            sid = name[len(prefix):len(prefix) + 11]
            rest = name[len(prefix) + 11:len(prefix) + 12]
            if SANDBOX_RE.match(sid) and (rest == "." or (prefix == "lab:{" and rest == "}")):
                return sid
    return None


async def census(conn: Any) -> dict[str, int]:
    """sandbox id -> number of keys, over the whole keyspace (one SCAN pass)."""
    counts: dict[str, int] = {}
    for pattern in ("emq:{s*", "lab:{s*"):
        async for raw in conn.scan_iter(match=pattern, count=1000):
            sid = sandbox_of_key(_text(raw))
            if sid is not None:
                counts[sid] = counts.get(sid, 0) + 1
    return counts


async def is_live(conn: Any, sandbox: str) -> bool:
    """A sandbox is live when it is registered or a room's."""
    if await conn.zscore(REGISTRY_KEY, sandbox) is not None:
        return True
    return sandbox in await rooms.room_sandboxes(conn)


RESET_TEXT = "Reset by the instructor: the starting scenario was landed again through the real scripts."


def survives_reset(sandbox: str) -> set[str]:
    """What a reset leaves: who the learner is (name, last page) and how far they got."""
    return {meta_key(sandbox), f"lab:{{{sandbox}}}:progress"}


def queue_of_key(name: str) -> str:
    """The queue (hashtag) a key belongs to: `emq:{s1.fanin}:…` -> `s1.fanin`."""
    start = name.find("{")
    end = name.find("}", start + 1)
    return name[start + 1:end] if start >= 0 and end > start else ""


async def reset_sandbox(conn: Any, sandbox: str) -> int:
    """Reset a sandbox the way each widget's own Reset does (under the widget's
    lock: the learner's `kept_on_reset` choices stay, the scenario lands again,
    and the outcome says the instructor reset it); every other key of the
    sandbox goes, except who the learner is and how far they got. The number
    of keys the sandbox held before (its meta and progress not counted)."""
    from server.widgets import WIDGETS  # the widgets import this package's sandbox module
    from server.widgets.base import Context, Outcome

    if not SANDBOX_RE.match(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    ctx = Context(conn, sandbox, by="instructor")
    owned = {queue for widget in WIDGETS.values() for queue in widget.queues(ctx)}
    spared = survives_reset(sandbox)
    held = 0
    for pattern in key_patterns(sandbox):
        names = [_text(n) async for n in conn.scan_iter(match=pattern, count=1000)]
        # One DEL per key: the keys of one sandbox span several hashtags (slots).
        for name in names:
            if name in spared:
                continue
            held += 1
            if queue_of_key(name) not in owned:
                await conn.delete(name)
    for widget in WIDGETS.values():
        if (await widget.state(ctx)).get("landed") == "1":
            await widget.reset_locked(ctx, Outcome(RESET_TEXT))
        else:
            await widget.clear(ctx)
    counts = [f for f in await conn.hkeys(meta_key(sandbox)) if _text(f).startswith("keys:")]
    if counts:
        await conn.hdel(meta_key(sandbox), *counts)
    return held


async def reset_sandboxes(conn: Any, sandboxes: list[str] | None, by: str = "instructor") -> int:
    """Reset these sandboxes (None: every sandbox) and tell their pages.

    The sandboxes stay live (their visitors still hold their cookies): each
    widget lands its starting scenario again when it next shows, and an open
    page redraws at once.
    """
    if sandboxes is None:
        found = {_text(m) for m in await conn.zrange(REGISTRY_KEY, 0, -1)}
        found |= set(await rooms.room_sandboxes(conn))
        found |= set(await census(conn))
        targets = sorted(found)
    else:
        for sandbox in sandboxes:
            if not SANDBOX_RE.match(sandbox):
                raise ValueError(f"not a sandbox id: {sandbox!r}")
        targets = sandboxes
    removed = 0
    for sandbox in targets:
        removed += await reset_sandbox(conn, sandbox)
    await publish_reset(conn, None if sandboxes is None else targets, by)
    return removed


async def expire_idle(conn: Any, ttl_seconds: int) -> list[str]:
    cutoff = int((time.time() - ttl_seconds) * 1000)
    stale = [_text(m) for m in await conn.zrangebyscore(REGISTRY_KEY, "-inf", cutoff)]
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


async def expire_rooms(conn: Any) -> list[str]:
    """Rooms whose record expired: forget them and remove their sandboxes."""
    gone = []
    for code, sandbox in await rooms.expired(conn):
        if SANDBOX_RE.match(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
            await delete_sandbox_keys(conn, sandbox)
        gone.append(code)
    return gone


async def remove_orphans(conn: Any) -> list[str]:
    """Keys of sandboxes that are no longer live (a lost registry entry, a
    write racing an expiry): removed, so no key lives forever."""
    orphans = []
    for sandbox in await census(conn):
        if not await is_live(conn, sandbox):
            await delete_sandbox_keys(conn, sandbox)
            orphans.append(sandbox)
    return orphans


async def reap(conn: Any, ttl_seconds: int) -> dict[str, list[str]]:
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

    def __init__(self, conn: Any, ttl_seconds: int, every: float = 30.0) -> None:
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
