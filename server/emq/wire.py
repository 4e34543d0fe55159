"""Reply decoding shared by the modules, and the client type they accept (``decode_responses``
either way: every text reply goes through ``text`` before it is compared)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from redis.asyncio import Redis, RedisCluster
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline
from redis.typing import EncodableT, FieldT

Conn: TypeAlias = Redis | RedisCluster
# A pipeline of either client: what `Conn.pipeline()` answers.
Pipe: TypeAlias = Pipeline | ClusterPipeline
# The fields of one HSET: redis-py's Mapping is invariant in its key, so a
# dict[str, str] does not pass where this does.
Fields: TypeAlias = dict[FieldT, EncodableT]


def text(value: Any) -> str | None:
    """bytes -> str (UTF-8); str and None pass through; ints become str."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def as_text(value: Any) -> str:
    return text(value) or ""


def as_int(value: Any, default: int = 0) -> int:
    """An integer reply (or a numeric string), ``default`` when missing."""
    if isinstance(value, int):
        return value
    decoded = text(value)  # None for a missing reply
    return int(decoded) if decoded else default


def as_dict(value: Mapping[Any, Any] | None) -> dict[str, str]:
    """An HGETALL reply with every field and value decoded to str."""
    return {as_text(k): as_text(v) for k, v in (value or {}).items()}


def raw(value: str) -> bytes:
    """The exact bytes of a value ``text`` produced (undoes surrogateescape)."""
    return value.encode("utf-8", "surrogateescape")
