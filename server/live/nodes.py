"""What the hub asks of each Valkey node it listens on.

Keyspace notifications switched on (they are node-local, and a restarted
server has forgotten them), the one subscription per node (every `emq:` key,
every widget's lab state, the lab's event channel), the sandbox a notified key
belongs to, and on a cluster the list of online primaries (CLUSTER SHARDS).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from server.emq.wire import Conn
from server.live import heartbeat
from server.live.events import EVENTS_CHANNEL
from server.live.heartbeat import NOTIFY_FLAGS, flags_on

log = logging.getLogger("emqlab.stream")

# The heartbeat's own key (server/live/heartbeat.py): always followed.
BEAT_PATTERN = "__keyspace@*__:emq:{" + heartbeat.BEAT_TAG + "*"


# a sandbox's patterns: these, its id, then any queue of it and any key name
_EMQ_KEYS, _LAB_KEYS, _ANY = "__keyspace@*__:emq:{", "__keyspace@*__:lab:{", ".*"


def patterns_of(sandbox: str) -> list[str]:
    """What the hub follows for a sandbox some page watches: its queues' keys,
    and its widgets' lab keys (state: move, choices, last outcome; lock: an
    action begins and ends, so a stream reads once per action). A sandbox no
    page watches costs the site nothing: Valkey sends it no notification."""
    return [f"{_EMQ_KEYS}{sandbox}{_ANY}", f"{_LAB_KEYS}{sandbox}{_ANY}"]


def sandbox_of_pattern(pattern: str) -> str | None:
    """The sandbox whose LAST pattern (`patterns_of`: its lab keys) this is;
    None for any other. Valkey confirms a PSUBSCRIBE's patterns in order."""
    if pattern.startswith(_LAB_KEYS) and pattern.endswith(_ANY):
        return pattern[len(_LAB_KEYS):-len(_ANY)] or None
    return None


def _flags_of(reply: Any) -> str:
    return str(reply.get("notify-keyspace-events", "")) if isinstance(reply, dict) else ""


async def enable_notifications(conn: Conn) -> bool:
    """Turn keyspace notifications on; False when the server refuses CONFIG.

    On a cluster client: on EVERY primary (notifications are node-local)."""
    try:
        if isinstance(conn, RedisCluster):
            await conn.initialize()
            for node in conn.get_primaries():
                if not flags_on(_flags_of(await conn.config_get("notify-keyspace-events", target_nodes=node))):
                    await conn.config_set("notify-keyspace-events", NOTIFY_FLAGS, target_nodes=node)
            return True
        if not flags_on(_flags_of(await conn.config_get("notify-keyspace-events"))):
            await conn.config_set("notify-keyspace-events", NOTIFY_FLAGS)
        return True
    except RedisError as exc:
        log.warning("cannot enable keyspace notifications (%s): the effects log stays empty", exc)
        return False


async def subscribe(pubsub: PubSub, sandboxes: list[str]) -> None:
    """The hub's subscription on a node: the heartbeat, the lab's events, and
    the keys of every sandbox a page watches now (more join as pages open)."""
    await pubsub.psubscribe(BEAT_PATTERN, *(p for sandbox in sandboxes for p in patterns_of(sandbox)))
    await pubsub.subscribe(EVENTS_CHANNEL)


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


def node_url(url: str, address: str) -> str:
    """The URL of one node: the site's URL (scheme, credentials, options)
    with that node's host:port."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{address}" if userinfo else address
    return parts._replace(netloc=netloc, path="/0").geturl()


def _online_primaries(shards: Iterable[Any]) -> list[str]:
    """"host:port" of every online primary in a CLUSTER SHARDS reply."""
    found = set()
    for shard in shards:
        for node in shard.get("nodes", []):
            if node.get("role") == "master" and node.get("health", "online") == "online":
                host = node.get("endpoint")
                if host in (None, "", "?"):
                    host = node.get("ip")
                found.add(f"{host}:{node['port']}")
    return sorted(found)


async def read_primaries(seeds: Iterable[str]) -> list[str]:
    """The online primaries, asked of each seed URL in turn until one answers
    (the first seed's node may be the one that left)."""
    last: Exception | None = None
    for seed in dict.fromkeys(seeds):
        client: Conn = aioredis.Redis.from_url(seed, decode_responses=True, socket_connect_timeout=1, socket_timeout=2)
        try:
            return _online_primaries(await client.execute_command("CLUSTER SHARDS"))
        except (RedisError, OSError, AttributeError, TypeError) as exc:
            last = exc
        finally:
            with contextlib.suppress(Exception):
                await client.aclose()
    raise RedisError(f"no cluster node answered CLUSTER SHARDS: {last}")
