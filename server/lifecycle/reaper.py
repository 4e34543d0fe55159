"""The reaper: every `every` seconds it removes whole the sandboxes idle past the TTL, those of
expired rooms, and orphans (admitted, no longer registered); one failure is logged, the round goes on.

A removal finds every key a sandbox may hold by name, never by a scan (`clear.lua` on its widgets'
queues, DEL of its own records), so its cost does not grow with Valkey's size."""

from __future__ import annotations

import asyncio
import logging
import time

from redis.exceptions import RedisError

from server.console import transcript
from server.emq.wire import Conn, as_text
from server.sandboxes import admission, keys, rooms
from server.sandboxes.keys import REGISTRY_KEY
from server.sandboxes.sandbox import SANDBOX_RE, queue_name
from server.valkey import acl
from server.widgets.reader import pipelined
from server.widgets.snapshot import Catalog
from server.widgets.turn import clear_call

log = logging.getLogger("emqlab.lifecycle")


def checked(sandbox: str) -> str:
    """A visitor's sandbox id (never the specimen's, which `queue_name` lets through)."""
    if not SANDBOX_RE.fullmatch(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    return sandbox


async def delete(conn: Conn, catalog: Catalog, sandbox: str) -> int:
    """Remove every key of `sandbox`: the number removed."""
    checked(sandbox)
    # `clear.lua` for every widget queue of the sandbox (lab state included)
    calls = [clear_call(w, sandbox, part) for w in catalog.widgets.values() for part in w.queue_parts]
    locks = [keys.lock_key(queue_name(sandbox, w.queue_parts[0])) for w in catalog.widgets.values()]
    names = [keys.meta_key(sandbox), keys.progress_key(sandbox), keys.work_key(sandbox),
             *await transcript.keys_of(conn, sandbox)]
    # one DEL for `names`: every lab:{<sandbox>}:… key shares the sandbox's slot
    replies = await pipelined(conn, [*calls, *(("DEL", lock) for lock in locks), ("DEL", *names),
                                     ("ZREM", admission.HELD_KEY, sandbox)])
    return sum(int(r) for r in replies[:-1] if isinstance(r, int))


async def remove(conn: Conn, catalog: Catalog, sandbox: str) -> bool:
    """Remove one sandbox's keys and its console's Valkey user; False (logged) when that failed."""
    try:
        await delete(conn, catalog, sandbox)
        await acl.drop_user(conn, sandbox)
        return True
    except (RedisError, OSError):
        raise  # Valkey away: the whole round waits for the next
    except Exception as exc:  # noqa: BLE001 - one sandbox's trouble must not stop the round
        log.warning("removing sandbox %s failed: %s", sandbox, exc)
        return False


async def expire_idle(conn: Conn, catalog: Catalog, ttl_seconds: int) -> list[str]:
    cutoff = int((time.time() - ttl_seconds) * 1000)
    gone = []
    for sandbox in [as_text(m) for m in await conn.zrangebyscore(REGISTRY_KEY, "-inf", cutoff)]:
        if not SANDBOX_RE.fullmatch(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
        # ZREM only a sandbox still as idle as when it was picked: one step.
        elif await admission.UNREGISTER_IF_IDLE.run(conn, [REGISTRY_KEY], [sandbox, cutoff]) and \
                await remove(conn, catalog, sandbox):
            gone.append(sandbox)
    return gone


async def reap(conn: Conn, catalog: Catalog, ttl_seconds: int) -> dict[str, list[str]]:
    # Never-used entries of sandboxes idle past the TTL: the registry's go below.
    await conn.zremrangebyscore(admission.UNUSED_KEY, "-inf", int((time.time() - ttl_seconds) * 1000))
    done: dict[str, list[str]] = {"sandboxes": await expire_idle(conn, catalog, ttl_seconds), "rooms": [],
                                  "orphans": []}
    for code, sandbox in await rooms.expired(conn):  # rooms whose record expired: their sandboxes go
        if SANDBOX_RE.fullmatch(sandbox):
            await conn.zrem(REGISTRY_KEY, sandbox)
            await remove(conn, catalog, sandbox)
        done["rooms"].append(code)
    # Orphans: admitted but no longer live (a lost registry entry, a write racing an expiry): the held
    # index less the registry, on the server (both share one slot); a room's sandbox is live without one.
    candidates = [as_text(m) for m in await conn.zdiff([admission.HELD_KEY, REGISTRY_KEY])]
    in_rooms = await rooms.room_sandboxes(conn) if candidates else set()
    for sandbox in candidates:
        if sandbox in in_rooms:
            continue
        if not SANDBOX_RE.fullmatch(sandbox):
            await conn.zrem(admission.HELD_KEY, sandbox)
        elif await remove(conn, catalog, sandbox):
            done["orphans"].append(sandbox)
    return done


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
