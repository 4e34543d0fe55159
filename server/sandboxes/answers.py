"""A class's answers (`lab:room:<CODE>:answers`) and demo votes (`…:votes`), kept on the class,
and what the class thinks of them.

An answer is written by the action that judged it, with a lab event so the class page moves at
once, its feedback kept (a note for "the count before" cannot be found from the value). One field
per `<widget>|<question>|<mode>|<round>|<step>|<learner>`: no mode or round replaces another.

Counted (pure), the answers make one entry per question, mode and round, one count per value and
verdict (a value can be right at one step and wrong at another); a second round also says how the
answers moved.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from server.emq.script import Call, Script
from server.emq.wire import Conn, as_dict
from server.live import events
from server.live.events import EVENTS_CHANNEL
from server.sandboxes.keys import answers_key, votes_key

ANSWER = Script.from_file(Path(__file__).resolve().parent / "scripts" / "answer.lua")
KEPT_FOR = 7 * 24 * 3600  # s: the answers of a class closed or expired without its cleanup go after this
MODES = ("own", "demo", "together")
Value = int | float | str | bool | None
Key = tuple[str, str, str, int | None, int | None]  # widget, question, mode, round, step


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


def class_stream(code: str) -> str:
    """The class page's stream name (never a sandbox id), which its lab events name."""
    return f"class:{code}"


def told(code: str, action: str) -> str:
    return events.encode("room", [class_stream(code)], {"code": code, "action": action})


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


# -- what the class thinks -------------------------------------------------------------


class Count(msgspec.Struct, frozen=True):
    value: Value
    count: int
    right: bool


class Move(msgspec.Struct, frozen=True):
    value: Value
    first: int
    second: int


class Counted(msgspec.Struct):
    widget: str
    question: str
    mode: str
    step: int | None
    round: int | None
    legend: str
    answered: int
    answers: list[Count]
    missing: list[str]  # the learners (sandbox ids, joining order) who have not answered
    common_wrong: Count | None = None
    feedback: str = ""  # the authored note of the most common wrong answer
    moved: list[Move] = []  # a second round: each value, first vote -> second vote
    changed: int = 0  # learners whose second vote differs from their first
    now_right: int = 0  # of them, those whose second vote is right

    @property
    def key(self) -> Key:
        return (self.widget, self.question, self.mode, self.round, self.step)

    def contract(self) -> dict[str, Any]:
        """The entry of answers.json: exactly the fields DESIGN.md gives (`across_modes` counts it)."""
        return {"widget": self.widget, "question": self.question, "step": self.step, "round": self.round,
                "legend": self.legend, "answered": self.answered,
                "answers": [{"value": c.value, "count": c.count, "right": c.right} for c in self.answers]}


def _same(value: Value) -> str:
    """A value's identity for counting: 2 and "2" stay apart, as they were given."""
    return json.dumps(value, sort_keys=True)


def count(key: Key, answers: Sequence[Given], learners: Sequence[str], legend: str) -> Counted:
    tally: Counter[tuple[str, bool]] = Counter((_same(a.value), a.right) for a in answers)
    values = {_same(a.value): a.value for a in answers}
    counts = [Count(values[v], n, right) for (v, right), n in tally.most_common()]  # ties: in the order first met
    wrong = next((c for c in counts if not c.right), None)
    notes = Counter(a.feedback for a in answers
                    if wrong is not None and not a.right and _same(a.value) == _same(wrong.value) and a.feedback)
    who = {a.learner for a in answers}
    widget, question, mode, round_, step = key
    return Counted(widget, question, mode, step, round_, legend, len(who), counts,
                   [learner for learner in learners if learner not in who], wrong,
                   notes.most_common(1)[0][0] if notes else "")


def moved(first: Counted, second: Counted, answers: Mapping[Key, Sequence[Given]]) -> None:
    """Fill `second` with how the answers moved from `first` (peer instruction's two votes)."""
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    values: dict[str, Value] = {}
    for tally, round_ in ((before, first), (after, second)):
        for c in round_.answers:
            tally[_same(c.value)] += c.count
            values[_same(c.value)] = c.value
    order = sorted(values, key=lambda v: (-after[v], -before[v]))
    second.moved = [Move(values[v], before[v], after[v]) for v in order]
    earlier = {a.learner: _same(a.value) for a in answers.get(first.key, ())}
    changed = [a for a in answers.get(second.key, ()) if a.learner in earlier and earlier[a.learner] != _same(a.value)]
    second.changed, second.now_right = len(changed), sum(a.right for a in changed)


def across_modes(given: Sequence[Given]) -> list[Given]:
    """The answers as answers.json counts them, whatever the mode (DESIGN.md's fields name none)."""
    return [msgspec.structs.replace(g, mode="any") for g in given]


def counted(given: Sequence[Given], learners: Sequence[str],
            legends: Mapping[tuple[str, str], str]) -> list[Counted]:
    """Every question the class has met, counted per round, in the order met."""
    members = set(learners)
    groups: dict[Key, list[Given]] = {}
    for answer in given:
        if answer.learner in members:
            step = answer.step if answer.round is not None else None
            groups.setdefault((answer.widget, answer.question, answer.mode, answer.round, step), []).append(answer)
    found = {key: count(key, answers, learners, legends.get(key[:2], key[1])) for key, answers in groups.items()}
    for (widget, question, mode, round_, step), second in found.items():
        first = found.get((widget, question, mode, 1, step))
        if round_ == 2 and first is not None:
            moved(first, second, groups)
    return list(found.values())
