"""A learner's progress in one hash of the sandbox's (resets leave it alone): `m:<widget>:<milestone>`,
`asked:`/`right:`/`verdict:<widget>`, `ex:<exercise>` ("passed/total"), written by `record.lua`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from server.emq.script import Call, Script
from server.emq.wire import Conn
from server.sandboxes import keys

RECORD = Script.from_file(Path(__file__).resolve().parent / "scripts" / "record.lua")


class WidgetProgress(msgspec.Struct):
    widget: str
    steps: list[str]  # the tour's milestones in order
    reached: list[str]  # those reached
    asked: int = 0
    right: int = 0
    verdict: str = ""

    @property
    def done(self) -> bool:
        return bool(self.steps) and len(self.reached) == len(self.steps)


def of_widget(fields: Mapping[str, str], widget: str, steps: Iterable[str]) -> WidgetProgress:
    order = list(steps)
    return WidgetProgress(widget, order, [s for s in order if fields.get(f"m:{widget}:{s}") == "1"],
                          _number(fields.get(f"asked:{widget}")), _number(fields.get(f"right:{widget}")),
                          fields.get(f"verdict:{widget}", ""))


def exercise_best(fields: Mapping[str, str], exercise: str) -> tuple[int, int] | None:
    raw = fields.get(f"ex:{exercise}", "")
    passed, _, total = raw.partition("/")
    return (int(passed), int(total)) if passed.isdecimal() and total.isdecimal() else None


def _number(raw: str | None) -> int:
    return int(raw) if raw and raw.isdecimal() else 0


@dataclass(frozen=True)
class Step:  # what one action adds to the record
    widget: str  # a widget's name, or "ex:<exercise>" for an exercise's run
    reached: tuple[str, ...] = ()
    right: bool | None = None  # None: no prediction was answered
    verdict: str = ""
    result: str = ""  # an exercise's "passed/total"


def record_call(sandbox: str, step: Step, ttl: int, now_ms: int) -> Call:
    asked = step.right is not None
    return (RECORD, [keys.meta_key(sandbox), keys.progress_key(sandbox)],
            [ttl, now_ms, step.widget, int(asked), int(bool(step.right)), step.verdict if asked else "",
             step.result, *step.reached])


def fields_of(reply: object) -> dict[str, str]:
    """`record.lua`'s reply (or an HGETALL's) as a dict."""
    if isinstance(reply, dict):
        return {str(k): str(v) for k, v in reply.items()}
    if isinstance(reply, list):
        return dict(zip(map(str, reply[::2]), map(str, reply[1::2]), strict=True))
    return {}


async def read(conn: Conn, sandbox: str) -> dict[str, str]:
    return fields_of(await conn.hgetall(keys.progress_key(sandbox)))


async def clear(conn: Conn, sandbox: str) -> bool:
    """Forget the record and the exercises' kept scripts (one slot, one DEL)."""
    return bool(await conn.delete(keys.progress_key(sandbox), keys.work_key(sandbox)))
