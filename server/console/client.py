"""The console's own Valkey client: RESP2 and undecoded, as valkey-cli talks.

The site's client speaks RESP3 and decodes text; the console shows replies as
valkey-cli prints them by default, which is RESP2 (HGETALL a flat list, a
score a bulk string) with every byte as sent. A small pool of its own keeps
a burst of console commands from taking the widgets' connections.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from server.valkey import connect


def open_client(url: str, cluster: bool | None = None) -> Any:
    if connect.wants_cluster(url, cluster):
        return RedisCluster.from_url(
            connect._cluster_url(url), protocol=2, decode_responses=False,
            socket_connect_timeout=1, socket_timeout=5,
        )
    return aioredis.Redis.from_pool(aioredis.BlockingConnectionPool.from_url(
        url, protocol=2, decode_responses=False, socket_connect_timeout=1, socket_timeout=5,
        health_check_interval=10, max_connections=16, timeout=5,
    ))
