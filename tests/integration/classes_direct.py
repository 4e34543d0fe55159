"""A class for the site-level tests, made the way the join makes one, without
the join's page (the instructor and room pages are being ported onto the new
core): the class and its learners written through server/sandboxes, and each
member given the signed class cookie the join would set. The site must run
with EMQLAB_SECRET = SECRET so the cookie is one it signed.
"""

from __future__ import annotations

import asyncio

import httpx
import redis.asyncio as aioredis

from server.sandboxes import learners, rooms
from server.sandboxes.sandbox import SignedCookie
from tests.support import LiveSite, sandbox_of

SECRET = "site-tests-secret"
ROOM_COOKIE = "emqlab_room"


def enrol(site: LiveSite, members: list[httpx.Client], mode: str = "own", host: httpx.Client | None = None) -> str:
    """A class in `mode` holding `members` (and `host`, whose sandbox a demo shows): its code."""

    async def write() -> str:
        conn = aioredis.Redis.from_url(site.valkey_url, decode_responses=True)
        try:
            room = await rooms.create(conn, "Site tests", ttl=3600, max_rooms=100,
                                      host=sandbox_of(host) if host is not None else "")
            for n, member in enumerate(members):
                await learners.join(conn, room.code, sandbox_of(member), f"Learner {n}", 3600, 7200)
            if mode != "own":
                await rooms.set_mode(conn, room.code, mode)
            return room.code
        finally:
            await conn.aclose()

    code = asyncio.run(write())
    cookie = SignedCookie(ROOM_COOKIE, SECRET, "emqlab-room", 3600).serializer.dumps(code)
    for client in [*members, *([host] if host is not None else [])]:
        client.cookies.set(ROOM_COOKIE, cookie)
    return code
