"""Rooms: a sandbox shared by a class, joined with a short code.

A room is one hash in Valkey, `lab:room:<CODE>` {name, sandbox, demo,
created, joins}, with a lifetime refreshed by activity, plus an index
`lab:rooms` (code -> sandbox) the instructor page and the reaper walk. The
room's sandbox is an ordinary sandbox id (`sandbox.new_id()`), so every key a
room's widgets write is inside that sandbox and a reset of the room is a reset
of that one sandbox. A visitor who joins carries a signed room cookie; while
the room exists, the middleware resolves the visitor's requests to the room's
sandbox. In demo mode only the instructor acts.
"""

from __future__ import annotations

import re
import secrets
import time
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any

from server.sandboxes.sandbox import REGISTRY_KEY, new_id

ROOMS_KEY = "lab:rooms"
ROOM_COOKIE = "emqlab_room"
# No 0/O or 1/I: a code read aloud to a class is typed right the first time.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
CODE_RE = re.compile(rf"^[{CODE_ALPHABET}]{{{CODE_LENGTH}}}$")
NAME_MAX = 60


class BadRoom(ValueError):
    """A room code or name that cannot be one (answered with a 400)."""


class RoomsFull(Exception):
    """No room can be opened now: the cap is reached (answered with a 409)."""


@dataclass
class Room:
    code: str
    name: str
    sandbox: str
    demo: bool
    created: float
    joins: int = 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def room_key(code: str) -> str:
    return f"lab:room:{code}"


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(raw: object) -> str:
    """A code as typed (`abc-234`, ` ABC 234 `) -> `ABC234`; BadRoom otherwise."""
    if not isinstance(raw, str):
        raise BadRoom("the room code must be text, like ABC234")
    code = re.sub(r"[\s-]", "", raw).upper()
    if not CODE_RE.match(code):
        raise BadRoom(
            f"a room code is {CODE_LENGTH} letters and digits (no 0, O, 1 or I), like ABC234"
        )
    return code


def clean_name(raw: object) -> str:
    if raw is None or raw == "":
        return "Class room"
    if not isinstance(raw, str):
        raise BadRoom("the room name must be text")
    name = " ".join(raw.split())
    if not name:
        return "Class room"
    if len(name) > NAME_MAX:
        raise BadRoom(f"a room name is at most {NAME_MAX} characters")
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        raise BadRoom("a room name cannot hold control characters")
    return name


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _room(code: str, raw: dict[Any, Any]) -> Room | None:
    fields = {_text(k): _text(v) for k, v in raw.items()}
    if "sandbox" not in fields:
        return None
    return Room(
        code=code,
        name=fields.get("name", "Class room"),
        sandbox=fields["sandbox"],
        demo=fields.get("demo") == "1",
        created=float(fields.get("created") or 0),
        joins=int(fields.get("joins") or 0),
    )


async def create(conn: Any, name: object, ttl: int, max_rooms: int) -> Room:
    clean = clean_name(name)
    if await conn.hlen(ROOMS_KEY) >= max_rooms:
        raise RoomsFull(f"at most {max_rooms} rooms can be open at once; close one first")
    for _ in range(20):
        code = new_code()
        room = Room(code=code, name=clean, sandbox=new_id(), demo=False, created=time.time())
        # HSETNX on the index claims the code; a clash simply draws another.
        if await conn.hsetnx(ROOMS_KEY, code, room.sandbox):
            async with conn.pipeline(transaction=False) as pipe:
                pipe.hset(room_key(code), mapping={
                    "name": clean, "sandbox": room.sandbox, "demo": "0",
                    "created": str(room.created), "joins": "0",
                })
                pipe.expire(room_key(code), ttl)
                pipe.zadd(REGISTRY_KEY, {room.sandbox: int(time.time() * 1000)})
                await pipe.execute()
            return room
    raise RoomsFull("could not draw a free room code; try again")


async def get(conn: Any, code: str) -> Room | None:
    if not CODE_RE.match(code):
        return None
    return _room(code, await conn.hgetall(room_key(code)))


async def find(conn: Any, code_or_name: str) -> Room | None:
    """A room by its code (as typed) or, failing that, by its exact name."""
    try:
        found = await get(conn, normalize_code(code_or_name))
        if found is not None:
            return found
    except BadRoom:
        pass
    wanted = " ".join(code_or_name.split()).casefold()
    for room in await list_rooms(conn):
        if room.name.casefold() == wanted:
            return room
    return None


async def list_rooms(conn: Any) -> list[Room]:
    codes = sorted(_text(c) for c in await conn.hkeys(ROOMS_KEY))
    found = []
    for code in codes:
        room = await get(conn, code)
        if room is not None:
            found.append(room)
    return found


async def set_demo(conn: Any, code: str, demo: bool) -> Room | None:
    room = await get(conn, code)
    if room is None:
        return None
    await conn.hset(room_key(code), "demo", "1" if demo else "0")
    room.demo = demo
    return room


async def record_join(conn: Any, code: str, ttl: int) -> None:
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hincrby(room_key(code), "joins", 1)
        pipe.expire(room_key(code), ttl)
        await pipe.execute()


async def close(conn: Any, code: str) -> Room | None:
    """Forget the room (its sandbox's keys are the caller's to reset)."""
    room = await get(conn, code)
    async with conn.pipeline(transaction=False) as pipe:
        pipe.delete(room_key(code))
        pipe.hdel(ROOMS_KEY, code)
        await pipe.execute()
    return room


async def expired(conn: Any) -> list[tuple[str, str]]:
    """Index entries whose room record has expired: (code, sandbox), forgotten here."""
    gone = []
    for code, sandbox in (await conn.hgetall(ROOMS_KEY)).items():
        code_s = _text(code)
        if not await conn.exists(room_key(code_s)):
            await conn.hdel(ROOMS_KEY, code_s)
            gone.append((code_s, _text(sandbox)))
    return gone


async def room_sandboxes(conn: Any) -> dict[str, str]:
    """sandbox id -> room code, for every room in the index."""
    return {_text(s): _text(c) for c, s in (await conn.hgetall(ROOMS_KEY)).items()}
