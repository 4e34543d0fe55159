"""What every widget is: a scenario on queues of its own, actions, readings, a tour.

Nothing is kept in the browser or in this process between clicks: what a
widget must remember goes in its lab state (`turn.remember`), in Valkey.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import msgspec

from server.refusal import Refusal
from server.widgets.view import Moment

if TYPE_CHECKING:
    from server.widgets.turn import Turn

OutcomeKind = Literal["ok", "refused", "info"]
Value = int | float | str | bool | None


class Prediction(msgspec.Struct, forbid_unknown_fields=True):
    """A learner's answer to the open question, sent with the action it is about."""

    question: str
    # Loose on purpose: any number or string is an answer; the verdict judges it.
    answer: int | float | str | None = None


class Body(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """An action's JSON body; unknown fields are refused (400) before anything runs."""

    predict: Prediction | None = None


class Outcome(msgspec.Struct, kw_only=True):
    """What one action did: one sentence, the tour's milestones it reached, values for tests."""

    text: str
    kind: OutcomeKind = "ok"
    reached: tuple[str, ...] = ()
    detail: dict[str, Value | list[str]] = {}


def info(text: str) -> Outcome:
    return Outcome(text=text, kind="info")


class GotoBody(Body):
    # a deep link's step (0: the scenario as it lands; past the tour, its last), or the link's text when it
    # names none (a link's text of any length is the page's to send: refused in words, quoted to 40 characters)
    step: Annotated[int, msgspec.Meta(ge=0)] | Annotated[str, msgspec.Meta(max_length=2000)]
    link: Annotated[str, msgspec.Meta(max_length=80)] = ""  # the link's name as the page has it: `#fanin-step`


class Refused(Refusal):
    """An action the scenario cannot take now: nothing was written; answered 409."""

    status = 409


class ResetStillFull(Refusal):
    """A Reset over maxmemory removed the widget's keys, but Valkey stayed at its limit: 503, retried in 30 s."""

    status, retry_after = 503, 30

    def __init__(self) -> None:
        super().__init__("Reset removed this widget's keys, but Valkey is still at its memory limit (other sandboxes "
                         "hold it), so the scenario lands again once memory frees: idle sandboxes are reaped; "
                         "try again then.")


Replay = tuple[str, dict[str, object]]


def do(slug: str, **body: object) -> Replay:
    return (slug, body)


@dataclass(frozen=True)
class Step:
    """One milestone of a widget's tour, reached when an outcome names it; a
    deep link to step N replays the `replay` actions of steps 1..N."""

    id: str
    label: str  # the checklist's words ("A completion counted")
    replay: tuple[Replay, ...]


ActionFn = Callable[[Any, "Turn", Any], Awaitable[Outcome]]
ReadingFn = Callable[[Any, Moment, Moment], Value]


@dataclass(frozen=True)
class Action:
    slug: str
    label: str  # the button's visible words
    fn: ActionFn
    body: type[Body]


def action(slug: str, label: str, body: type[Body] = Body) -> Callable[[ActionFn], ActionFn]:
    """Mark a method as the action `POST /api/widgets/<widget>/<slug>`."""

    def mark(fn: ActionFn) -> ActionFn:
        fn.__widget_action__ = (slug, label, body)  # type: ignore[attr-defined]
        return fn

    return mark


def reading(name: str) -> Callable[[ReadingFn], ReadingFn]:
    """Mark a method `(self, now, before) -> value` as a reading questions may name."""

    def mark(fn: ReadingFn) -> ReadingFn:
        fn.__widget_reading__ = name  # type: ignore[attr-defined]
        return fn

    return mark


FATES = {"awaiting_children": "held", "pending": "released", "failed": "failed"}


def parent_reading(name: str, parent: str, part: str | None = None) -> ReadingFn:
    """A reading of a flow's parent: `dependencies` (its counter, "no counter" once gone),
    `children-outstanding` (held and still waiting for a child), `<who>-claimable` ("yes"
    while it waits in pending, else "no") or `parent-fate`."""

    @reading(name)
    def measured(self: Any, now: Moment, before: Moment) -> Value:
        view = now.view(part)
        found, state = view.number(parent, ":dependencies"), view.fields(parent).get("state")
        if name == "dependencies":
            return found if found is not None else "no counter"
        if name == "children-outstanding":
            return found is not None and found > 0 and state == "awaiting_children"
        if name.endswith("-claimable"):
            return "yes" if parent in view.members("pending") else "no"
        return FATES.get(state or "", "gone")

    return measured


@dataclass(frozen=True)
class Description:
    readout: str
    picture: msgspec.Struct | None  # the widget's own Struct: its template draws its fields


@dataclass(frozen=True)
class Design:
    """The widget's row of DESIGN.md's table (tests outside the project rely on it): its region's
    words, its buttons' labels (`containing`: words in a label), its checkboxes', radios', groups' names."""

    region: str
    buttons: tuple[str, ...] = ()
    containing: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


class Widget:
    name: ClassVar[str]
    title: ClassVar[str]
    design: ClassVar[Design]
    queue_parts: ClassVar[tuple[str, ...]]
    tour: ClassVar[tuple[Step, ...]] = ()
    # Lab state fields that are the learner's choices: a Reset keeps them.
    kept_on_reset: ClassVar[tuple[str, ...]] = ()
    # An action that lets the lock go while it works (the race's Run): a second one meanwhile
    # answers 409 instead of queueing behind it (its own tests say what runs at once leaves).
    runs_unlocked: ClassVar[bool] = False
    rows: ClassVar[tuple[str, ...]] = ()  # job_ids of every part, for a widget that needs no more
    reset_text: ClassVar[str] = "Reset: the scenario was landed again through the real scripts."
    actions: ClassVar[dict[str, Action]]
    readings: ClassVar[dict[str, ReadingFn]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.actions, cls.readings = {}, {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                if marked := getattr(value, "__widget_action__", None):
                    slug, label, body = marked
                    cls.actions[slug] = Action(slug, label, value, body)
                if named := getattr(value, "__widget_reading__", None):
                    cls.readings[named] = value

    def job_ids(self, part: str) -> tuple[str, ...]:
        """Ids the scenario lands on the queue `part` (rows shown even off every set)."""
        return self.rows

    async def land(self, turn: Turn) -> None:
        """Land the starting scenario through the real scripts."""

    async def first_shown(self, turn: Turn) -> None:
        """Played on a sandbox's first showing, under the same lock (the race's recorded run)."""

    def describe(self, moment: Moment) -> Description:
        """The picture and readout, built only from the keys just read."""
        return Description("", None)

    def partial_context(self) -> dict[str, object]:
        """What the widget's template needs beyond the widget (a stepper: its listing)."""
        return {}

    def label(self, slug: str) -> str:
        found = self.actions.get(slug)
        return found.label if found else slug

    def measure(self, name: str, now: Moment, before: Moment) -> Value:
        return self.readings[name](self, now, before)

    @action("reset", "Reset")
    async def reset(self, turn: Turn, body: Body) -> Outcome:
        await turn.clear()
        await self.land(turn)
        return Outcome(text=self.reset_text)

    def step_of(self, body: GotoBody) -> int:
        """The link's step; a link that names none is refused in words, before anything is written."""
        if isinstance(body.step, int) or (body.step.isascii() and body.step.isdigit()):
            return int(body.step)
        steps = f"a step of this tour (1–{len(self.tour)})" if self.tour else "a step: this widget has no tour"
        # quoted without what a reader cannot see (controls, direction marks) that could reorder the sentence
        seen = "".join(c for c in body.step if unicodedata.category(c)[0] != "C")
        shown = seen if len(seen) <= 40 else seen[:40] + "…"
        raise Refused(f"{body.link or 'step'}={shown} is not {steps}; the widget stays as it is.", status=422)

    @action("goto", "Go to step", GotoBody)
    async def goto(self, turn: Turn, body: GotoBody) -> Outcome:
        """`#<widget>-step=N`: the scenario rebuilt on Valkey as steps 1..N leave it."""
        total, asked = len(self.tour), self.step_of(body)
        step = min(asked, total)
        past = f"The tour has {total} steps; here is the last. " if asked > total else ""
        # the tour runs from the scenario as it lands: a learner's kept choice does not apply
        await turn.clear(keep_choices=False)
        await self.land(turn)
        last = Outcome(text="the scenario as it lands.")
        for entry in self.tour[:step]:
            for slug, raw in entry.replay:
                await turn.read()  # each action decides from what the one before it left
                found = self.actions[slug]
                last = await found.fn(self, turn, msgspec.convert(raw, found.body))
        where = f"Step {step} of {total}" + (f" ({self.tour[step - 1].label})" if step else "")
        return Outcome(text=f"{past}{where}, replayed on Valkey: {last.text}", kind=last.kind, detail=last.detail)
