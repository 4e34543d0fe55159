"""The class roster in two round trips, each row from the learner's own records (an action is
recorded on its learner, whatever sandbox it ran in): every mode and worker reads the same."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from server.emq.wire import Conn
from server.sandboxes import keys, presence, progress
from server.sandboxes import learners as class_learners
from server.sandboxes.progress import WidgetProgress

STUCK_WRONG = 3  # wrong answers in a row on one widget
STUCK_IDLE = 300  # seconds on one step, page open, no action

Tours = Mapping[str, Sequence[str]]  # widget -> its tour's milestone ids, in the course's order


class Learner(msgspec.Struct):
    id: str  # the learner's sandbox: Reset and Watch on the class page; not in roster.json
    name: str
    page: str | None
    widget: str | None
    online: bool
    last_seen: float | None
    joined: float
    records: list[WidgetProgress]  # each widget the learner did something on, in the course's order
    exercises: dict[str, tuple[int, int]]  # exercise -> its best run (passed, total)
    checks: dict[str, dict[str, bool]]  # exercise -> check -> passed, when the record names checks
    stuck: str = ""

    def public(self) -> dict[str, Any]:
        """roster.json's row; its `progress` per widget: steps reached of all, and predictions."""
        per_widget = {r.widget: {"reached": len(r.reached), "steps": len(r.steps), "done": r.done, "asked": r.asked,
                                 "right": r.right, "verdict": r.verdict} for r in self.records}
        return {"name": self.name, "page": self.page, "widget": self.widget, "online": self.online,
                "last_seen": self.last_seen, "progress": per_widget}


def _seen(meta: Mapping[str, str]) -> float | None:
    raw = meta.get("seen", "")
    return int(raw) / 1000 if raw.isdecimal() else None


def exercises_of(fields: Mapping[str, str]) -> tuple[dict[str, tuple[int, int]], dict[str, dict[str, bool]]]:
    """Each exercise's best run (`ex:<exercise>`) and its checks (`ex:<exercise>:<check>` = "1" or "0")."""
    best: dict[str, tuple[int, int]] = {}
    checks: dict[str, dict[str, bool]] = {}
    for field, value in fields.items():
        if not field.startswith("ex:"):
            continue
        name, _, check = field[3:].partition(":")
        if check:
            checks.setdefault(name, {})[check] = value == "1"
        elif (found := progress.exercise_best(fields, name)) is not None:
            best[name] = found
    return dict(sorted(best.items())), {k: dict(sorted(v.items())) for k, v in sorted(checks.items())}


def stuck(meta: Mapping[str, str], records: Sequence[WidgetProgress], runs: Mapping[str, int], now: float,
          joined: float = 0.0) -> str:
    """Why a learner may need a hand ("" when not): wrong answers in a row, or idle on an unfinished
    widget since their last action in this class (or since joining)."""
    for widget, run in sorted(runs.items()):
        if run >= STUCK_WRONG:
            return f"{run} wrong answers in a row on {widget}"
    seen, last = _seen(meta), meta.get("widget")
    since = max(seen or 0.0, joined)
    record = next((r for r in records if r.widget == last), None)
    if presence.online(meta) and since and now - since >= STUCK_IDLE and record and not record.done:
        steps, minutes = f"{len(record.reached)} of {len(record.steps)} steps", int(now - since) // 60
        if seen is None or seen < joined:
            return f"no action since joining {minutes} min ago; {last} {steps}"
        return f"no action for {minutes} min on {last}, {steps}"
    return ""


async def read(conn: Conn, code: str, tours: Tours,
               runs: Mapping[tuple[str, str], int] | None = None) -> list[Learner]:
    """Every learner of the class, in joining order. `runs`: (widget, learner) -> wrong answers in a row."""
    joined = await class_learners.joined_at(conn, code)
    async with conn.pipeline(transaction=False) as pipe:  # no learner: nothing to send, no round trip
        for sandbox in joined:
            pipe.hgetall(keys.meta_key(sandbox))
            pipe.hgetall(keys.progress_key(sandbox))
        # a record of another type (a fault) leaves its row blank, not the whole roster refused
        replies = iter(class_learners.hashes(await pipe.execute(raise_on_error=False)))
    now, rows = time.time(), []
    for sandbox, at in joined.items():
        meta, made = next(replies), next(replies)
        records = [found for name, steps in tours.items()
                   if (found := progress.of_widget(made, name, steps)).reached or found.asked]
        best, checks = exercises_of(made)
        own = {widget: n for (widget, who), n in (runs or {}).items() if who == sandbox}
        rows.append(Learner(id=sandbox, name=meta.get("name") or "(no name)", page=presence.page(meta),
                            widget=meta.get("widget") or None, online=presence.online(meta), last_seen=_seen(meta),
                            joined=at, records=records, exercises=best, checks=checks,
                            stuck=stuck(meta, records, own, now, at)))
    return rows


def progress_words(row: Learner) -> str:
    """The progress cell: "fanin 2 of 8 steps, 1 of 2 predictions right" per widget."""
    parts = []
    for record in row.records:
        said = (f"{record.widget} done" if record.done
                else f"{record.widget} {len(record.reached)} of {len(record.steps)} steps")
        if record.asked:
            said += f", {record.right} of {record.asked} predictions right"
        parts.append(said)
    return " · ".join(parts) or "not started"


def exercise_words(row: Learner) -> str:
    """The exercises cell: "fan-in 3 of 5 checks (failed: redelivered)" per exercise."""
    parts = []
    for name, (passed, total) in row.exercises.items():
        failed = [check for check, ok in row.checks.get(name, {}).items() if not ok]
        parts.append(f"{name} {passed} of {total} checks" + (f" (failed: {', '.join(failed)})" if failed else ""))
    return " · ".join(parts) or "—"
