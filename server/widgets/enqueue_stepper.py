"""The @enqueue_flow stepper: the real script, run one move further each click.

Move N empties the stepper's queue and runs a prefix of the very script file
through its `-- @move N` marker (`registry.run_prefix`), so the keys shown are
what Valkey holds after those lines.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import msgspec
from markupsafe import Markup, escape

from server.emq import flows, registry
from server.emq.errors import EmqError
from server.widgets import base
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.flow import plural, spec
from server.widgets.turn import Turn
from server.widgets.view import Moment, QueueView

SCRIPT = "enqueue_flow"
PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2")
NON_JOB_CHILD = "child2"  # well-formed, so the host's id gate lets it by; the script's kind law refuses it
MOVES = tuple(registry.moves(SCRIPT))  # read at import: a script that lost its markers stops the start
TOTAL = len(MOVES)


def flow_spec(non_job: bool) -> dict[str, Any]:
    return spec(PARENT, "ship the order", [CHILDREN[0], NON_JOB_CHILD if non_job else CHILDREN[1]], "step {i}")


def title(move: int) -> str:
    return MOVES[move - 1].title


@dataclass(frozen=True)
class Place:
    """Where the stepper stands, as its lab state keeps it (`rebuild` returns the place it left)."""

    move: int  # the moves the script ran through (0: nothing ran)
    non_job: bool
    refused: str  # Valkey's refusal, "" when the last run was not refused
    refused_at: int  # the move that refused
    answer: Any = None  # the script's reply, from the run that just built it: N at its end, nil after a prefix

    @classmethod
    def of(cls, moment: Moment) -> Place:
        state = moment.state
        return cls(_bounded(state.get("move")), state.get("non_job") == "1",
                   state.get("refused") or "", _bounded(state.get("refused_at")))


def _bounded(raw: str | None) -> int:
    try:
        return min(max(int(raw or 0), 0), TOTAL)
    except ValueError:
        return 0


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    move: int | None


class Job(msgspec.Struct, kw_only=True):
    id: str
    state: str | None
    dependencies: int | None
    sets: list[str]


class Picture(msgspec.Struct, kw_only=True):
    move: int
    total: int
    non_job: bool
    refused: str
    refused_at: int
    parent: Job
    children: list[Job]


@functools.cache
def lines() -> tuple[Line, ...]:
    """The script's lines, each tagged with its move."""
    owner = {n: m.number for m in MOVES for n in range(m.first_line, m.last_line + 1)}
    return tuple(Line(i, text, owner.get(i)) for i, text in enumerate(registry.script_source(SCRIPT).splitlines(), 1))


@functools.cache
def listing() -> dict[str, object]:
    """The script's listing for the partial."""
    path = registry.script_path(SCRIPT)
    # server/emq/scripts/<name>.lua, as the repository names it
    return {"script": SCRIPT, "script_path": path.relative_to(path.parents[3]).as_posix(),
            "lines": lines(), "moves": MOVES, "marked": marked}


@functools.cache
def marked(current: int, move: int, refused_at: int) -> Markup:
    """The listing's lines marked at one point of a run: the moves through `move` ran, `current` is
    shown, `refused_at` refused (0: none; all 0: nothing marked). The same for every visitor at that
    point, so built once per point rather than line by line in the template on every drawing."""
    drawn = []
    for line in lines():
        n = line.move or 0
        marks = [mark for mark, on in ((" current", n == current), (" refused", n == refused_at),
                                       (" ran", n <= move and n != current)) if on and n > 0]
        moved = f' data-move="{n}"' if line.move else ""
        drawn.append(f'<span class="line{"".join(marks)}" data-line="{line.number}"{moved}>{escape(line.text)}</span>')
    return Markup("\n".join(drawn) + "\n")


def job(view: QueueView, job_id: str) -> Job:
    return Job(id=job_id, state=view.fields(job_id).get("state"),
               dependencies=view.number(job_id, ":dependencies"), sets=view.sets_of(job_id))


class IdChoice(Body):
    non_job: bool


class EnqueueStepper(Widget):
    name = "enqueue-stepper"
    title = "The @enqueue_flow transition"
    design = Design(  # DESIGN.md's row
        "@enqueue_flow", ("Next move", "Previous move", "Run atomically", "Reset"), choices=("Use a non-JOB id",))
    queue_parts = ("stepper",)
    rows = (PARENT, *CHILDREN, NON_JOB_CHILD)
    kept_on_reset = ("non_job",)
    reset_text = "Reset: the stepper's queue is empty, before move 1; your choice of ids is kept."
    tour = (
        *(Step(f"move-{m.number}", f"Move {m.number}: {m.title}", (do("next"),)) for m in MOVES),
        Step("refused", "A non-JOB id refused by the kind law, nothing written",
             (do("non-job", non_job=True), do("run-atomically"))),
        Step("atomic", "The whole script run as one call", (do("non-job", non_job=False), do("run-atomically"))),
        Step("back", "Previous move rebuilt the move before", (do("previous"),)),
    )

    def partial_context(self) -> dict[str, object]:
        return listing()

    def describe(self, moment: Moment) -> Description:
        at, view = Place.of(moment), moment.first
        second = NON_JOB_CHILD if at.non_job else CHILDREN[1]
        parent, children = job(view, PARENT), [job(view, c) for c in (CHILDREN[0], second)]
        # what the queue holds, in words: its key count, the children, the parent, the counter
        groups: dict[str, list[str]] = {}
        for child in children:
            if child.state is not None:
                groups.setdefault(f"state {child.state}, in {', '.join(child.sets) or 'no state set'}",
                                  []).append(child.id)
        kids = "; ".join(f"{' and '.join(ids)}: {words}" for words, ids in groups.items()) or "no child row"
        row = (f"{PARENT}: no row yet" if parent.state is None else
               f"{PARENT}: state {parent.state}, in {', '.join(parent.sets) or 'no state set'}")
        counter = "no :dependencies yet" if parent.dependencies is None else f":dependencies = {parent.dependencies}"
        held = (f"{plural(view.count, 'key')} in the stepper's queue; {kids}; {row}; {counter}" if view.count
                else "the stepper's queue holds no key")
        if at.refused:
            # the stepper empties its queue before every run: say so, not that nothing changed
            after = held if view.count else f"the queue was emptied for the run and the script wrote nothing, {held}"
            readout = f"Refused in move {at.refused_at} ({title(at.refused_at)}) with {at.refused}: {after}."
        elif at.move == 0:
            readout = f"Before move 1: {held}."
        else:
            readout = f"After move {at.move} of {TOTAL} ({title(at.move)}): {held}."
        return Description(readout, Picture(
            move=at.move, total=TOTAL, non_job=at.non_job, refused=at.refused, refused_at=at.refused_at,
            parent=parent, children=children))

    @reading("keys")
    def keys(self, now: Moment, before: Moment) -> Value:
        return now.first.count

    @reading("can-move")
    def can_move(self, now: Moment, before: Moment) -> Value:
        at = Place.of(now)
        return not at.refused and at.move < TOTAL

    @reading("non-job-armed")
    def non_job_armed(self, now: Moment, before: Moment) -> Value:
        at = Place.of(now)
        return at.non_job and not at.refused

    async def rebuild(self, turn: Turn, move: int, non_job: bool) -> Place:
        """Empty the queue, then run the script through `move`; remember where that left the stepper."""
        await turn.clear()  # each move is rebuilt from nothing, as the script starts from nothing
        turn.remember(move=str(move), non_job="1" if non_job else "0", refused="", refused_at="0")
        if move == 0:
            return Place(0, non_job, "", 0)
        keys, argv = flows.enqueue_flow_call(turn.queue(), flow_spec(non_job))
        try:
            if move == TOTAL:
                return Place(move, non_job, "", 0, await registry.run(turn.conn, SCRIPT, keys, argv))
            return Place(move, non_job, "", 0, await registry.run_prefix(turn.conn, SCRIPT, move, keys, argv))
        except EmqError as exc:
            at = move
            # which move refused: the first shorter prefix that refuses too (a probe repeats its writes)
            for shorter in range(1, move):
                try:
                    await registry.run_prefix(turn.conn, SCRIPT, shorter, keys, argv)
                except EmqError:
                    at = shorter
                    break
            turn.remember(move=str(at - 1), refused=str(exc), refused_at=str(at))
            return Place(at - 1, non_job, str(exc), at)

    @staticmethod
    def refusal(at: Place) -> Outcome:
        return Outcome(text=f"The queue was emptied and enqueue_flow ran from its top: it refused in move "
                            f"{at.refused_at} ({title(at.refused_at)}) with {at.refused}, before writing a key.",
                       kind="refused", reached=("refused",), detail={"error": at.refused, "refused_at": at.refused_at})

    @action("next", "Next move")
    async def next_move(self, turn: Turn, body: Body) -> Outcome:
        at = Place.of(turn.moment)
        if at.refused:
            return info(f"enqueue_flow already refused in move {at.refused_at}: untick Use a non-JOB id, "
                        "or press Previous move or Reset.")
        if at.move >= TOTAL:
            return info("The script has run to its end: press Previous move or Reset.")
        ran = await self.rebuild(turn, at.move + 1, at.non_job)
        if ran.refused:
            return self.refusal(ran)
        ending = f"it answered {ran.answer}" if ran.move == TOTAL else "it stops there"
        return Outcome(text=f"Move {ran.move} of {TOTAL}, {title(ran.move)}: enqueue_flow ran from its top "
                            f"through this move on an empty queue; {ending}.",
                       reached=(f"move-{ran.move}",), detail={"move": ran.move})

    @action("previous", "Previous move")
    async def previous_move(self, turn: Turn, body: Body) -> Outcome:
        at = Place.of(turn.moment)
        if at.move == 0 and not at.refused:
            return info("Already before move 1: nothing of the script has run.")
        # After a refusal the moves before the refusing one stand; otherwise one move back.
        ran = await self.rebuild(turn, at.move if at.refused else at.move - 1, at.non_job)
        if ran.refused:
            return self.refusal(ran)
        back = ("back",) if at.move > 0 else ()
        if ran.move == 0:
            return Outcome(text="Back before move 1: the stepper's queue was emptied.", reached=back,
                           detail={"move": 0})
        return Outcome(text=f"Back to move {ran.move} of {TOTAL}, {title(ran.move)}: the queue was emptied and "
                            "the script ran again through it.", reached=(*back, f"move-{ran.move}"),
                       detail={"move": ran.move})

    @action("run-atomically", "Run atomically")
    async def run_atomically(self, turn: Turn, body: Body) -> Outcome:
        ran = await self.rebuild(turn, TOTAL, Place.of(turn.moment).non_job)
        if ran.refused:
            return self.refusal(ran)
        return Outcome(text=f"The whole script ran as one call and answered {ran.answer}: every move's writes "
                            "landed at once.", reached=("atomic",), detail={"move": ran.move})

    @action("non-job", "Use a non-JOB id", IdChoice)
    async def choose_ids(self, turn: Turn, body: IdChoice) -> Outcome:
        again = " again" if Place.of(turn.moment).non_job else ""
        await self.rebuild(turn, 0, body.non_job)
        which = (f"The second child is now {NON_JOB_CHILD!r}, not JOB-prefixed" if body.non_job
                 else f"Every id is JOB-prefixed{again}")
        return info(f"{which}; the stepper is back before move 1.")

    @action("goto", "Go to step", base.GotoBody)
    async def goto(self, turn: Turn, body: base.GotoBody) -> Outcome:
        """`#step=N`: a kept non-JOB choice would stop every move at the gate, so a link unticks it first."""
        self.step_of(body)  # a link that names no step changes nothing, the choice included
        turn.remember(non_job="0")
        await turn.flush()  # written now: the Reset inside the replay keeps what the state holds
        return await super().goto(turn, body)
