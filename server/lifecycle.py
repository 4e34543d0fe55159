"""Sandbox lifecycle: list, reset and expire sandboxes, from the site or a shell.

A sandbox is every key whose hashtag starts with its id. Resetting one removes
those keys and tells its open pages (they redraw at once, and each widget
lands its scenario again when it next shows). Idle sandboxes are removed the
same way by the reaper, so no key lives forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from server.sandbox import REGISTRY_KEY, SANDBOX_RE, key_patterns
from server.stream import publish_reset

log = logging.getLogger("emqlab.lifecycle")


@dataclass
class SandboxInfo:
    id: str
    last_seen: float
    widget: str | None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def list_sandboxes(conn: Any) -> list[SandboxInfo]:
    rows = await conn.zrange(REGISTRY_KEY, 0, -1, withscores=True, desc=True)
    infos = []
    for member, score in rows:
        sid = _text(member)
        widget = await conn.hget(f"lab:{{{sid}}}:meta", "widget")
        infos.append(SandboxInfo(sid, score / 1000.0, _text(widget) if widget else None))
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


async def reset_sandboxes(conn: Any, sandboxes: list[str] | None, by: str = "instructor") -> int:
    """Remove the keys of these sandboxes (None: every sandbox) and tell their pages."""
    if sandboxes is None:
        targets = [_text(m) for m in await conn.zrange(REGISTRY_KEY, 0, -1)]
    else:
        targets = sandboxes
    removed = 0
    for sandbox in targets:
        removed += await delete_sandbox_keys(conn, sandbox)
    await publish_reset(conn, None if sandboxes is None else targets, by)
    return removed


async def expire_idle(conn: Any, ttl_seconds: int) -> list[str]:
    cutoff = int((time.time() - ttl_seconds) * 1000)
    stale = [_text(m) for m in await conn.zrangebyscore(REGISTRY_KEY, "-inf", cutoff)]
    for sandbox in stale:
        await delete_sandbox_keys(conn, sandbox)
        await conn.zrem(REGISTRY_KEY, sandbox)
    return stale


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
                gone = await expire_idle(self.conn, self.ttl)
                if gone:
                    log.info("expired %d idle sandboxes", len(gone))
            except (RedisError, OSError):
                pass  # Valkey away: try again next round
            await asyncio.sleep(self.every)
