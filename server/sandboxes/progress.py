"""A learner's progress through the course, per sandbox, in one Valkey hash.

    lab:{<sandbox>}:progress          a hash; per widget name <w>:
      at:<w>        the tour step the widget's scenario is at, counted while
                    the learner follows its tour (Reset: 0; a deep link: N)
      reached:<w>   the furthest tour step reached, 0 .. steps
      steps:<w>     how many steps the widget's tour has
      done:<w>      "1" once the tour's last step was reached
      asked:<w>     predictions answered
      right:<w>     predictions Valkey proved right
      verdict:<w>   the last verdict, in words ("Right: Valkey now holds …")

Every field is a plain string or integer, so anything that reads the hash
(the instructor's roster, a shell's HGETALL) needs no code of ours; `read`
parses it per widget and `overall` sums it (widgets done, predictions asked
and right) for a roster line. The key's
hashtag is the sandbox id, not a widget queue, so a widget's Reset (which
removes its queues' keys) leaves the record alone, and so does an
instructor's reset of the sandbox (`lifecycle.survives_reset`); the reaper
removes it with the sandbox's other `lab:` keys, which it names
(`known_keys.py`). Each write also re-arms an
expiry of twice the sandbox TTL, like the activity record's, so it cannot
outlive an idle sandbox even if the reaper never runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from server.emq.wire import Conn, as_text
from server.sandboxes.sandbox import SANDBOX_RE


def progress_key(sandbox: str) -> str:
    if not SANDBOX_RE.match(sandbox):
        raise ValueError(f"not a sandbox id: {sandbox!r}")
    return f"lab:{{{sandbox}}}:progress"


class WidgetProgressJSON(TypedDict):
    """One widget's progress as /api/progress and the roster give it."""

    widget: str
    steps: int
    reached: int
    done: bool
    asked: int
    right: int
    verdict: str
    summary: str


class DiveProgressJSON(TypedDict):
    path: str
    title: str
    summary: str
    done: int
    asked: int
    right: int
    widgets: list[WidgetProgressJSON]


@dataclass(frozen=True)
class WidgetProgress:
    widget: str
    steps: int = 0
    reached: int = 0
    asked: int = 0
    right: int = 0
    verdict: str = ""

    @property
    def done(self) -> bool:
        return self.steps > 0 and self.reached >= self.steps

    @property
    def summary(self) -> str:
        if self.done:
            said = f"Done: every step of its tour reached ({self.steps} of {self.steps})"
        else:
            said = f"{self.reached} of {self.steps} tour steps reached"
        if self.asked:
            said += f"; {self.right} of {self.asked} prediction{'' if self.asked == 1 else 's'} right"
        return said + "."

    def as_json(self) -> WidgetProgressJSON:
        return {"widget": self.widget, "steps": self.steps, "reached": self.reached, "done": self.done,
                "asked": self.asked, "right": self.right, "verdict": self.verdict, "summary": self.summary}


def parse(raw: dict[Any, Any]) -> dict[str, WidgetProgress]:
    """The hash as Valkey returned it -> progress per widget."""
    fields: dict[str, dict[str, str]] = {}
    for key, value in raw.items():
        name, _, widget = as_text(key).partition(":")
        if widget:
            fields.setdefault(widget, {})[name] = as_text(value)

    def number(found: dict[str, str], name: str) -> int:
        value = found.get(name, "0")
        return int(value) if value.isdigit() else 0

    return {
        widget: WidgetProgress(widget, number(f, "steps"), number(f, "reached"), number(f, "asked"),
                               number(f, "right"), f.get("verdict", ""))
        for widget, f in fields.items()
    }


async def read(conn: Conn, sandbox: str) -> dict[str, WidgetProgress]:
    return parse(await conn.hgetall(progress_key(sandbox)))


FIELDS = ("at", "reached", "steps", "asked", "right", "verdict")


@dataclass(frozen=True)
class Held:
    """One widget's record as Valkey holds it before an action: where its
    scenario is on the tour (`at`), and the rest of the record."""

    at: int
    record: WidgetProgress


def held_fields(widget: str) -> list[str]:
    """The hash fields `held` reads (for a caller that pipelines the HMGET)."""
    return [f"{name}:{widget}" for name in FIELDS]


def parse_held(widget: str, raw: list[Any]) -> Held:
    values = dict(zip(FIELDS, (as_text(v) if v is not None else "" for v in raw)))

    def number(name: str) -> int:
        return int(values[name]) if values[name].isdigit() else 0

    return Held(number("at"), WidgetProgress(widget, number("steps"), number("reached"), number("asked"),
                                             number("right"), values["verdict"]))


async def held(conn: Conn, sandbox: str, widget: str) -> Held:
    return parse_held(widget, await conn.hmget(progress_key(sandbox), held_fields(widget)))


@dataclass(frozen=True)
class Step:
    """What one action did to a widget's record."""

    steps: int
    at: int  # where the scenario is on the tour after the action
    counted: bool = True  # False for a deep link: it moves the scenario, the learner reached nothing
    right: bool | None = None  # None: no prediction was answered
    verdict: str = ""


def advance(before: Held, step: Step) -> WidgetProgress:
    """The widget's record after one action (a pure function of the record before it)."""
    old = before.record
    return WidgetProgress(
        old.widget, step.steps, max(old.reached, step.at) if step.counted else old.reached,
        old.asked + (step.right is not None), old.right + bool(step.right),
        step.verdict if step.right is not None else old.verdict,
    )


def writes(sandbox: str, record: WidgetProgress, at: int, ttl: int) -> list[tuple[Any, ...]]:
    """The commands that store `record`: the action sends them with its last round trip.

    Plain HSETs of values computed from the record just read are safe: a
    widget's actions run one at a time per sandbox (its lock), and each widget
    owns its own fields.
    """
    key, w = progress_key(sandbox), record.widget
    fields: dict[str, Any] = {f"at:{w}": at, f"reached:{w}": record.reached, f"steps:{w}": record.steps,
                              f"asked:{w}": record.asked, f"right:{w}": record.right}
    if record.verdict:
        fields[f"verdict:{w}"] = record.verdict
    if record.done:
        fields[f"done:{w}"] = 1
    flat = [item for pair in fields.items() for item in pair]
    return [("HSET", key, *flat), ("EXPIRE", key, ttl)]


def overall(found: dict[str, WidgetProgress]) -> dict[str, int]:
    """The whole record in three numbers (what a roster shows for one learner)."""
    return {"done": sum(w.done for w in found.values()), "asked": sum(w.asked for w in found.values()),
            "right": sum(w.right for w in found.values())}


async def clear(conn: Conn, sandbox: str) -> bool:
    """Start over: forget the whole record (the widgets' scenarios stay as they are)."""
    return bool(await conn.delete(progress_key(sandbox)))


@dataclass(frozen=True)
class DiveProgress:
    """One dive's widgets, in page order, and a sentence about them."""

    path: str
    title: str
    widgets: list[WidgetProgress]

    @property
    def done(self) -> int:
        return sum(w.done for w in self.widgets)

    @property
    def asked(self) -> int:
        return sum(w.asked for w in self.widgets)

    @property
    def right(self) -> int:
        return sum(w.right for w in self.widgets)

    @property
    def summary(self) -> str:
        total = len(self.widgets)
        said = f"{self.done} of {total} widget{'' if total == 1 else 's'} done"
        if self.asked:
            said += f", {self.right} of {self.asked} prediction{'' if self.asked == 1 else 's'} right"
        return said

    def as_json(self) -> DiveProgressJSON:
        return {"path": self.path, "title": self.title, "summary": self.summary, "done": self.done,
                "asked": self.asked, "right": self.right, "widgets": [w.as_json() for w in self.widgets]}


def for_dive(path: str, title: str, names: list[str], steps: dict[str, int],
             found: dict[str, WidgetProgress]) -> DiveProgress:
    """A dive's progress: each widget it places, with its tour's length even if never touched."""
    widgets = [found.get(n) or WidgetProgress(n, steps.get(n, 0)) for n in names]
    return DiveProgress(path, title, widgets)
