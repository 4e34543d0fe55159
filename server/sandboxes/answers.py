"""A class's answers (`lab:room:<CODE>:answers`) and demo votes (`…:votes`), kept on the class.

An answer is written by the action that judged it, with a lab event so the class page moves at
once, its feedback kept (a note for "the count before" cannot be found from the value). One field
per `<widget>|<question>|<mode>|<round>|<step>|<learner>`: no mode or round replaces another.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import msgspec

from server.emq.script import Call, Script
from server.emq.wire import Conn, as_dict
from server.live.events import EVENTS_CHANNEL

ANSWER = Script.from_file(Path(__file__).resolve().parent / "scripts" / "answer.lua")
KEPT_FOR = 7 * 24 * 3600  # s: the answers of a class closed or expired without its cleanup go after this
Value = int | float | str | bool | None


MODES = ("own", "demo", "together")


class Given(msgspec.Struct, frozen=True):
    widget: str
    question: str
    round: int | None  # None: met on their own; 1 or 2: an asked question's round
    learner: str
    value: Value
    right: bool
    step: int | None = None  # where an asked question was put
    at: int = 0  # ms
    feedback: str = ""
    mode: str = "own"  # the class's mode when it was given
    text: str = ""  # the verdict in words, shown to a learner whose verdict waited for Reveal


def answers_key(code: str) -> str:
    return f"lab:room:{code}:answers"


def votes_key(code: str) -> str:
    return f"lab:room:{code}:votes"


def class_stream(code: str) -> str:
    """The class page's stream name (never a sandbox id), which its lab events name."""
    return f"class:{code}"


def told(code: str, action: str) -> str:
    return json.dumps({"type": "room", "sandboxes": [class_stream(code)], "id": secrets.token_hex(8),
                       "data": {"code": code, "action": action}})


def answer_field(widget: str, question: str, mode: str, round_: int | None, step: int | None,
                 learner: str) -> str:
    return "|".join((widget, question, mode, "-" if round_ is None else str(round_),
                     "-" if step is None else str(step), learner))


def answer_command(code: str, learner: str, widget: str, question: str, value: object, right: bool,
                   round_: int | None = None, step: int | None = None, *, feedback: str = "",
                   mode: str = "own", text: str = "") -> Call:
    field = answer_field(widget, question, mode, round_, step, learner)
    kept = json.dumps({"value": value, "right": right, "step": step, "at": int(time.time() * 1000),
                       "feedback": feedback, "text": text})
    return (ANSWER, [answers_key(code)], [field, kept, f"wrong|{widget}|{learner}", int(right), KEPT_FOR,
                                          told(code, "answered"), EVENTS_CHANNEL])


def _given(field: str, raw: str) -> Given | None:
    """`<widget>|<question>|<mode>|<round or ->|<step or ->|<learner>` (an older site's
    `<widget>|<question>|<round or ->|<learner>`: own) -> the answer kept as JSON."""
    parts = field.split("|")
    if len(parts) == 6 and parts[2] in MODES:
        widget, question, mode, round_, _, learner = parts
    elif len(parts) == 4:
        (widget, question, round_, learner), mode = parts, "own"
    else:
        return None
    try:
        kept = msgspec.json.decode(raw, type=dict[str, Any])
        return msgspec.convert({**kept, "widget": widget, "question": question, "learner": learner, "mode": mode,
                                "round": int(round_) if round_.isdecimal() else None}, type=Given)
    except msgspec.DecodeError:  # a value this site did not write (ValidationError is one): not counted
        return None


def parse(fields: dict[str, str]) -> tuple[list[Given], dict[tuple[str, str], int]]:
    """Every answer, and each (widget, learner)'s run of wrong answers (`wrong|<widget>|<learner>`)."""
    given: list[Given] = []
    runs: dict[tuple[str, str], int] = {}
    for field, raw in fields.items():
        if field.startswith("wrong|"):
            _, widget, learner = [*field.split("|"), "", ""][:3]
            runs[(widget, learner)] = int(raw) if raw.isdecimal() else 0
        elif (found := _given(field, raw)) is not None:
            given.append(found)
    given.sort(key=lambda g: (g.at, g.widget, g.question, g.learner))  # the order met; ties in a fixed order
    return given, runs


async def read(conn: Conn, code: str) -> tuple[list[Given], dict[tuple[str, str], int]]:
    return parse(as_dict(await conn.hgetall(answers_key(code))))


async def vote(conn: Conn, code: str, round_: int, learner: str, value: Value, ttl: int) -> None:
    """A vote where only the instructor presses (demo, together); the latest counts."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hset(votes_key(code), f"{round_}|{learner}", json.dumps({"value": value, "at": int(time.time() * 1000)}))
        pipe.expire(votes_key(code), ttl)
        pipe.publish(EVENTS_CHANNEL, told(code, "voted"))
        await pipe.execute()


async def votes(conn: Conn, code: str, round_: int) -> dict[str, Value]:
    found: dict[str, Value] = {}
    for field, raw in as_dict(await conn.hgetall(votes_key(code))).items():
        at, _, learner = field.partition("|")
        if at == str(round_):
            try:
                found[learner] = msgspec.json.decode(raw, type=dict[str, Any]).get("value")
            except msgspec.DecodeError:
                continue
    return found


async def clear_votes(conn: Conn, code: str) -> None:
    await conn.delete(votes_key(code))


async def tell(conn: Conn, code: str, action: str) -> None:
    """Wake the class page's stream (an ask, a reveal, a press)."""
    await conn.publish(EVENTS_CHANNEL, told(code, action))
