"""The reaper: every `every` seconds it removes whole the sandboxes idle past the TTL, those of
expired rooms, and orphans (admitted, no longer registered); one failure is logged, the round goes on."""

from __future__ import annotations

import asyncio
import logging
import time

from redis.exceptions import RedisError

from server.console.as_user import drop_user
from server.emq.wire import Conn, as_text
from server.lifecycle import removal
from server.sandboxes import admission, rooms
from server.sandboxes.keys import REGISTRY_KEY
from server.sandboxes.sandbox import SANDBOX_RE
from server.widgets.snapshot import Catalog

log = logging.getLogger("emqlab.lifecycle")


async def remove(conn: Conn, catalog: Catalog, sandbox: str) -> bool:
    """Remove one sandbox's keys; False (logged) when that failed."""
    try:
        await removal.delete(conn, catalog, sandbox)
        await drop_user(conn, sandbox)  # its console's Valkey user goes with it
        return True
    except (RedisError, OSError):
        raise  # Valkey away: the whole round waits for the next
    except Exception as exc:  # noqa: BLE001 - one sandbox's trouble must not stop the round
        log.warning("removing sandbox %s failed: %s", sandbox, exc)
        return False


async def expire_idle(conn: Conn, catalog: Catalog, ttl_seconds: int) -> list[str]:
    cutoff = int((time.time() - ttl_seconds) * 1000)
    stale = [as_text(m) for m in await conn.zrangebyscore(REGISTRY_KEY, "-inf", cutoff)]
    gone = []
    for sandbox in stale:
        if not SANDBOX_RE.fullmatch(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
            continue
        # ZREM only a sandbox still as idle as when it was picked: one step.
        idle = int(await admission.UNREGISTER_IF_IDLE.run(conn, [REGISTRY_KEY], [sandbox, cutoff]))
        if idle and await remove(conn, catalog, sandbox):
            gone.append(sandbox)
    return gone


async def expire_rooms(conn: Conn, catalog: Catalog) -> list[str]:
    """Rooms whose record expired: forget them and remove their sandboxes."""
    gone = []
    for code, sandbox in await rooms.expired(conn):
        if SANDBOX_RE.fullmatch(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
            await remove(conn, catalog, sandbox)
        gone.append(code)
    return gone


async def remove_orphans(conn: Conn, catalog: Catalog) -> list[str]:
    """Sandboxes admitted but no longer live (a lost registry entry, a write racing an expiry)."""
    # The held index less the registry, on the server (both share one slot);
    # a room's sandbox is live without a registry entry.
    candidates = [as_text(m) for m in await conn.zdiff([admission.HELD_KEY, REGISTRY_KEY])]
    in_rooms = set((await rooms.room_sandboxes(conn)).keys()) if candidates else set()
    orphans = []
    for sandbox in candidates:
        if sandbox in in_rooms:
            continue
        if not SANDBOX_RE.fullmatch(sandbox):
            await conn.zrem(admission.HELD_KEY, sandbox)
            continue
        if await remove(conn, catalog, sandbox):
            orphans.append(sandbox)
    return orphans


async def reap(conn: Conn, catalog: Catalog, ttl_seconds: int) -> dict[str, list[str]]:
    # Never-used entries of sandboxes idle past the TTL: the registry's go below.
    await admission.forget_unused(conn, int((time.time() - ttl_seconds) * 1000))
    return {
        "sandboxes": await expire_idle(conn, catalog, ttl_seconds),
        "rooms": await expire_rooms(conn, catalog),
        "orphans": await remove_orphans(conn, catalog),
    }


async def run(conn: Conn, catalog: Catalog, ttl_seconds: int, every: float = 30.0) -> None:
    """`reap` every `every` seconds, for ever: the site runs it as a background task."""
    while True:
        try:
            done = await reap(conn, catalog, ttl_seconds)
            if any(done.values()):
                log.info("reaper: expired %d idle sandboxes, %d rooms; removed %d orphans",
                         len(done["sandboxes"]), len(done["rooms"]), len(done["orphans"]))
        except (RedisError, OSError):
            pass  # Valkey away: try again next round
        except Exception:
            log.exception("reaper round failed")
        await asyncio.sleep(every)
