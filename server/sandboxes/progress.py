"""A learner's progress in one hash of the sandbox's (resets leave it alone): `m:<widget>:<milestone>`,
`asked:`/`right:`/`verdict:<widget>`, `ex:<exercise>` ("passed/total"), written by `record.lua`.

Their kept work on the exercises, the last script the graders ran of each, is in ``lab:{<sandbox>}:work``
beside it, not in it (every action answers the record whole: scripts of 16 KiB would ride along), with
the same slot and lifetime (one DEL: ``clear``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from server.emq.script import Call, Script
from server.emq.wire import Conn, Pipe
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
    asked, right = (fields.get(f"{what}:{widget}", "") for what in ("asked", "right"))
    return WidgetProgress(widget, order, [s for s in order if fields.get(f"m:{widget}:{s}") == "1"],
                          int(asked) if asked.isdecimal() else 0, int(right) if right.isdecimal() else 0,
                          fields.get(f"verdict:{widget}", ""))


def exercise_best(fields: Mapping[str, str], exercise: str) -> tuple[int, int] | None:
    passed, _, total = fields.get(f"ex:{exercise}", "").partition("/")
    return (int(passed), int(total)) if passed.isdecimal() and total.isdecimal() else None


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


@dataclass(frozen=True)
class Mine:  # what ``GET /api/exercises/<name>`` answers as ``mine``
    script: str | None
    best: tuple[int, int] | None

    def as_json(self) -> dict[str, object]:
        best = {"passed": self.best[0], "total": self.best[1]} if self.best else None
        return {"script": self.script, "best": best}


def keep_work(pipe: Pipe, sandbox: str, exercise: str, script: str, ttl: int) -> None:
    """Queue the writes that keep ``script`` as the learner's last for ``exercise``."""
    pipe.hset(keys.work_key(sandbox), exercise, script)
    pipe.expire(keys.work_key(sandbox), ttl)


async def mine(conn: Conn, sandbox: str, exercise: str) -> Mine:
    """The learner's last script and best run of ``exercise``: one round trip."""
    async with conn.pipeline(transaction=False) as pipe:
        pipe.hget(keys.work_key(sandbox), exercise)
        pipe.hget(keys.progress_key(sandbox), f"ex:{exercise}")
        script, best = await pipe.execute()
    return Mine(script, exercise_best({f"ex:{exercise}": best or ""}, exercise))
