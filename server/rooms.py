"""Rooms: a sandbox shared by a class, joined with a short code."""

from __future__ import annotations

from typing import Any

ROOMS_KEY = "lab:rooms"


async def sandbox_of_room(conn: Any, name: str) -> str | None:
    value = await conn.hget(ROOMS_KEY, name)
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)
