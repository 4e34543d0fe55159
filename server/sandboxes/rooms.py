"""Classes ("rooms"): `lab:room:<CODE>` {name, sandbox, mode, host, created, joins, ask}, read by
every worker on every request, and the index `lab:rooms` (code -> shared sandbox) the instructor
page and the reaper walk. What a closed class leaves for download is `closed_classes`.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
from contextlib import suppress
from dataclasses import asdict, dataclass, replace
from typing import Any

from server.emq.wire import Conn, Fields, as_dict, as_text
from server.refusal import Refusal
from server.sandboxes.keys import REGISTRY_KEY, answers_key, learners_key, meta_key, votes_key
from server.sandboxes.keys import room_key as room_key
from server.sandboxes.learners import BadName, learner_ids, readable
from server.sandboxes.sandbox import new_id
from server.valkey.reply import wrong_type

log = logging.getLogger("emqlab.rooms")
ROOMS_KEY = "lab:rooms"
# No 0/O or 1/I: a code read aloud to a class is typed right the first time.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6
CODE_RE = re.compile(rf"^[{CODE_ALPHABET}]{{{CODE_LENGTH}}}$")
NAME_MAX = 60
MODE_WORDS = {  # the modes, and how the pages name them
    "own": "own sandboxes: each learner acts in their own",
    "demo": "demo: everyone watches the instructor's sandbox, read-only",
    "together": "together: the class shares one sandbox",
}


@dataclass(frozen=True)
class Ask:
    """The question put to the whole class ("Ask the class"), round 1 then 2."""

    widget: str
    question: str
    step: int
    round: int = 1
    revealed: bool = False

    def veils(self, mode: str) -> bool:
        """Whether a learner's verdict is kept from them for now: in own sandboxes until Reveal, so a
        second round comes before anyone has seen the answer (demo and together judge at the press)."""
        return mode == "own" and not self.revealed


def _ask(raw: str) -> Ask | None:
    with suppress(TypeError, ValueError):  # not an Ask we wrote: none
        data = json.loads(raw) if raw else None
        return Ask(**data) if isinstance(data, dict) else None
    return None


class BadRoom(Refusal, ValueError):
    """A room code or name that cannot be one (400)."""


class RoomsFull(Refusal):
    """No room can be opened now: the cap is reached (409)."""

    status = 409


@dataclass
class Room:
    code: str
    name: str
    sandbox: str  # the class's shared sandbox (mode "together")
    mode: str
    created: float
    joins: int = 0
    host: str = ""  # the instructor's own sandbox, shown to everyone in demo
    ask: Ask | None = None

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "demo": self.mode == "demo"}

    @property
    def stage(self) -> str:
        """The sandbox the whole class watches outside own sandboxes: the host's in a demo, else the shared one."""
        return self.host if self.mode == "demo" and self.host else self.sandbox

    def acting(self, visitor: str) -> tuple[str, bool]:
        """(the sandbox a member acts in, whether it is read-only for them): own, the host's demo, or shared."""
        if self.mode == "together":
            return self.sandbox, False
        if self.mode == "demo" and self.host and visitor != self.host:
            return self.host, True
        return visitor, False


def normalize_code(raw: object) -> str:
    """A code as typed (`abc-234`, ` ABC 234 `) -> `ABC234`; BadRoom otherwise."""
    code = re.sub(r"[\s-]", "", raw).upper() if isinstance(raw, str) else ""
    if not CODE_RE.match(code):
        raise BadRoom(f"a room code is {CODE_LENGTH} letters and digits (no 0, O, 1 or I), like ABC234")
    return code


def clean_name(raw: object) -> str:
    """A room's name (a learner's name's rule); empty gives "Class room"."""
    if raw is not None and not isinstance(raw, str):
        raise BadRoom("the room name must be text")
    try:
        return readable(raw or "", NAME_MAX, "a room name") or "Class room"
    except BadName as exc:
        raise BadRoom(str(exc)) from exc


def clean_mode(raw: object) -> str:
    if not isinstance(raw, str) or raw not in MODE_WORDS:
        raise BadRoom(f"'mode' must be one of: {', '.join(MODE_WORDS)}")
    return raw


def _room(code: str, raw: dict[Any, Any]) -> Room | None:
    fields = as_dict(raw)
    if "sandbox" not in fields:
        return None
    mode = fields.get("mode") or ("demo" if fields.get("demo") == "1" else "own")
    return Room(code=code, name=fields.get("name", "Class room"), sandbox=fields["sandbox"],
                mode=mode if mode in MODE_WORDS else "own", created=float(fields.get("created") or 0),
                joins=int(fields.get("joins") or 0), host=fields.get("host", ""), ask=_ask(fields.get("ask", "")))


async def create(conn: Conn, name: object, ttl: int, max_rooms: int, host: str = "") -> Room:
    clean = clean_name(name)
    if await conn.hlen(ROOMS_KEY) >= max_rooms:
        raise RoomsFull(f"at most {max_rooms} rooms can be open at once; close one first")
    for _ in range(20):
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        room = Room(code=code, name=clean, sandbox=new_id(), mode="own", created=time.time(), host=host)
        # HSETNX on the index claims the code; a clash simply draws another.
        if await conn.hsetnx(ROOMS_KEY, code, room.sandbox):
            async with conn.pipeline(transaction=False) as pipe:
                pipe.hset(room_key(code), mapping={"name": clean, "sandbox": room.sandbox, "mode": "own", "host": host,
                                                   "created": str(room.created), "joins": "0"})
                pipe.expire(room_key(code), ttl)
                pipe.zadd(REGISTRY_KEY, {room.sandbox: int(time.time() * 1000)})
                await pipe.execute()
            return room
    raise RoomsFull("could not draw a free room code; try again")


def _or_none(reply: object) -> Any:
    """A class's key read back: a key of another type (an operator's command, a fault; no learner can
    write one) counts as no class, so its learners act in their own sandboxes again rather than meet a
    503 on every request, and the reaper forgets it (`expired`). Any other error is raised."""
    if wrong_type(reply):
        log.warning("a class key holds another type than a hash or zset: the class is treated as closed")
        return None
    if isinstance(reply, Exception):
        raise reply
    return reply


async def get(conn: Conn, code: str) -> Room | None:
    if not CODE_RE.match(code):
        return None
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hgetall(room_key(code))
        for key in class_keys(code):
            pipe.type(key)
        raw, *kinds = await pipe.execute(raise_on_error=False)
    # of another type, they refused the class's every page and its close: they start again, as record.lua's
    if wrong := [key for key, kind, want in zip(class_keys(code), kinds, ("zset", "hash", "hash"), strict=True)
                 if as_text(_or_none(kind)) not in (want, "none")]:
        log.warning("%s held another type than the class's: started again", ", ".join(wrong))
        await conn.delete(*wrong)
    return _room(code, _or_none(raw) or {})


async def membership(conn: Conn, code: str, visitor: str) -> tuple[Room | None, bool, str]:
    """The room, whether `visitor` is in it (a learner or its host), and their name: one round trip."""
    if not CODE_RE.match(code):
        return None, False, ""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hgetall(room_key(code))
        pipe.zscore(learners_key(code), visitor)
        pipe.hget(meta_key(visitor), "name")
        raw, score, name = await pipe.execute(raise_on_error=False)
    room = _room(code, _or_none(raw) or {})
    if room is None:
        return None, False, ""
    # a member's activity record of another type only loses their name here (their next action's
    # record starts it again: record.lua)
    name = "" if wrong_type(name) else name
    return room, _or_none(score) is not None or (bool(room.host) and room.host == visitor), as_text(_or_none(name))


async def find(conn: Conn, code_or_name: str) -> Room | None:
    """A room by its code (as typed) or, failing that, by its exact name."""
    with suppress(BadRoom):
        if (found := await get(conn, normalize_code(code_or_name))) is not None:
            return found
    wanted = " ".join(code_or_name.split()).casefold()
    return next((room for room in await list_rooms(conn) if room.name.casefold() == wanted), None)


async def list_rooms(conn: Conn) -> list[Room]:
    found = [await get(conn, code) for code in sorted(as_text(c) for c in await conn.hkeys(ROOMS_KEY))]
    return [room for room in found if room is not None]


async def set_mode(conn: Conn, code: str, mode: str, host: str | None = None) -> Room | None:
    """Switch the class's mode; starting a demo names whose sandbox is shown."""
    room = await get(conn, code)
    if room is None:
        return None
    fields: Fields = {"mode": clean_mode(mode)}
    if host:
        fields["host"] = host
    await conn.hset(room_key(code), mapping=fields)
    return replace(room, mode=mode, host=host or room.host)


async def record_join(conn: Conn, code: str, ttl: int) -> None:
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hincrby(room_key(code), "joins", 1)
        pipe.expire(room_key(code), ttl)
        await pipe.execute()


async def audience(conn: Conn, room: Room) -> list[str]:
    """Every sandbox a member's open page may listen on: the learners', the host's (if any), the shared one."""
    return sorted({*await learner_ids(conn, room.code), room.sandbox, room.host} - {""})


async def set_ask(conn: Conn, code: str, ask: Ask | None, ttl: int) -> None:
    """Put a question to the class (None: none); the class lives on."""
    async with conn.pipeline(transaction=False) as pipe:
        if ask is None:
            pipe.hdel(room_key(code), "ask")
        else:
            pipe.hset(room_key(code), "ask", json.dumps(asdict(ask)))
        pipe.expire(room_key(code), ttl)
        await pipe.execute()


def class_keys(code: str) -> list[str]:
    return [learners_key(code), answers_key(code), votes_key(code)]


async def close(conn: Conn, code: str) -> None:
    """Forget the room (its sandbox's keys are the caller's to reset)."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.delete(room_key(code), *class_keys(code))
        pipe.hdel(ROOMS_KEY, code)
        await pipe.execute()


async def expired(conn: Conn) -> list[tuple[str, str]]:
    """Index entries whose room record has expired, or holds another type than a hash (`_or_none`):
    (code, sandbox), forgotten here."""
    gone = []
    # walked by code, the index's key: two codes naming one sandbox are both forgotten
    for code, sandbox in as_dict(await conn.hgetall(ROOMS_KEY)).items():
        if as_text(await conn.type(room_key(code))) != "hash":
            await conn.hdel(ROOMS_KEY, code)
            await conn.delete(room_key(code), *class_keys(code))
            gone.append((code, sandbox))
    return gone


async def room_sandboxes(conn: Conn) -> set[str]:
    """The shared sandbox of every room in the index."""
    return {as_text(s) for s in await conn.hvals(ROOMS_KEY)}
