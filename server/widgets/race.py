"""Race the workers: real workers on one flow, faults from a seed, invariants from the keys.

"Run" lands a fresh flow, marks the run in the lab state and lets go of the lock, so
Reset can stop it and a second Run is refused (409); the workers (`race_run.Race`) write
the timeline as Valkey answers. The invariants are safety rules decided only from what
Valkey holds after the run; whether the parent was released at all is said beside them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Annotated, Literal

import msgspec

from server.emq import flows
from server.sandboxes import keys
from server.widgets import base, flow
from server.widgets.base import Body, Description, Design, Outcome, Refused, Step, Value, Widget, action, do, reading
from server.widgets.race_run import CAP_S, EARLY, PARENT, Plan, Race, child_ids
from server.widgets.race_workers import Turns, fence
from server.widgets.turn import Busy, Turn
from server.widgets.view import Moment

Fault = Literal["crash", "lapse", "twice"]
# the runs going in this process, by sandbox: Reset stops its sandbox's run
RUNS: dict[str, asyncio.Task[str]] = {}
# the tour's race, played on a sandbox's first showing: the recorded run a page shows before any Run
RECORDED: dict[str, object] = {"workers": 3, "children": 6, "faults": ["crash", "lapse", "twice"], "seed": 2}


def going_clients(moment: Moment) -> list[int] | None:
    """The CLIENT IDs of a run still going (its marker's `until` not passed), else None. The
    time cap bounds it: after a Valkey restart, which gives out IDs from 1 again, a stale
    marker may name others' connections, which `fence` leaves be by their names."""
    going = moment.kept("run") or {}
    if going.get("status") != "running" or not int(going.get("until") or 0) > time.time() * 1000:
        return None
    clients = going.get("clients")
    return [c for c in clients if isinstance(c, int)] if isinstance(clients, list) else []


class Entry(msgspec.Struct, frozen=True):
    worker: str
    op: str
    job: str
    reply: str


class Invariant(msgspec.Struct, frozen=True):
    id: str
    held: bool
    text: str


class Picture(msgspec.Struct, frozen=True):
    seed: int
    status: str  # ready | running | done
    recorded: bool  # the tour's race, played when the sandbox first showed the widget
    ended: str
    choices: Plan
    script: str  # the complete the workers ran
    parent: str  # the parent's state, in words
    dependencies: int | None
    processed: int
    timeline: list[Entry]
    invariants: list[Invariant]
    held: str  # one sentence when a finished run left the parent held, and why ("" otherwise)


def invariants(moment: Moment, n: int) -> list[Invariant]:
    view = moment.first
    children = set(child_ids(n))
    deps = view.number(PARENT, ":dependencies")
    processed = view.fields(PARENT, ":processed")
    state = view.fields(PARENT).get("state")
    released = state is not None and state != "awaiting_children"
    recorded = len(set(processed) & children)
    live = [c for c in children if view.row(c) is not None and view.sets_of(c)]
    metrics = view.get("metrics:completed")
    try:
        completed = int((metrics.value if metrics is not None and isinstance(metrics.value, dict) else {}).get(
            "count") or 0)
    except ValueError:
        completed = 0
    counted_ok = deps is not None and deps >= 0 and n - deps == recorded and set(processed) <= children
    counted = Invariant("counted-once", counted_ok, (
        f"Each child counted once: :processed holds {recorded} and :dependencies = {deps}, {n} children in all."
        if counted_ok else
        f"A child was counted without its result: :dependencies fell to {deps}, yet :processed holds "
        f"{recorded} of {n}."))
    early = released and (recorded < n or deps != 0)
    below = deps is not None and deps < 0
    release_text = (f"The parent was released before every child was counted: :processed held {recorded} of {n}."
                    if early else f":dependencies went below zero ({deps}): a child was counted twice."
                    if below else "The parent was released once, after its last child: :dependencies = 0."
                    if released else f"The parent was never released early: it is still held, :dependencies "
                    f"= {deps}.")
    lost = n - len(live) - completed
    none_lost = Invariant("none-lost", lost <= 0, (
        f"No child lost: {completed} completed, {len(live)} still waiting to run." if lost <= 0 else
        f"{lost} child(ren) vanished: neither completed nor waiting in a state set."))
    return [counted, Invariant("released-once", not early and not below, release_text), none_lost]


def picture(moment: Moment) -> Picture:
    run = moment.kept("run") or {}
    try:
        choices = msgspec.convert(run["choices"], Plan) if isinstance(run.get("choices"), dict) else Plan()
    except msgspec.ValidationError:
        choices = Plan()
    view = moment.first
    state = view.fields(PARENT).get("state")
    deps = view.number(PARENT, ":dependencies")
    status = str(run.get("status") or "ready")
    entries = []
    for _, raw in sorted((k, v) for k, v in moment.state.items() if k.startswith("race:t:")):
        try:
            entries.append(msgspec.convert(json.loads(raw), Entry))
        except (ValueError, msgspec.ValidationError):
            continue  # a half-written entry never breaks the picture
    # said plainly when a finished run left the parent held: safe, yet never released
    held = ""
    if status == "done" and state == "awaiting_children":
        held = (f"The parent is still held: the run ended with :dependencies = {deps}, children still outstanding."
                if not any(e.reply.startswith("1: the row retired") for e in entries) else
                "The parent is still held and nothing will release it: a late completion retired a child "
                "that had already left active without counting it, so :dependencies stays at "
                f"{deps} (the lost count dive 01 teaches).")
    return Picture(
        seed=choices.seed, status=status, recorded=bool(run.get("recorded")), ended=str(run.get("ended") or ""),
        choices=choices,
        script="complete_early_release" if choices.early_release else "complete",
        parent={"awaiting_children": "held", "pending": "released", "active": "released and claimed",
                None: "gone"}.get(state, state or "gone"),
        dependencies=deps, processed=len(view.fields(PARENT, ":processed")),
        timeline=entries, invariants=invariants(moment, choices.children) if status == "done" else [], held=held)


def readout(found: Picture) -> str:
    if found.status == "running":
        return f"Racing: {len(found.timeline)} answers so far; the parent is {found.parent}."
    if found.status != "done":
        return (f"A parent held on {found.choices.children} children in queue race: "
                "choose the workers and faults, then Run.")
    held = sum(i.held for i in found.invariants)
    broke = [i.id for i in found.invariants if not i.held]
    # one line, as every readout: which invariants broke by name; why is said once, in the picture's
    # invariant list (and why a parent stays held, in race-held), not again here
    said = (f"The run ended at {found.ended}: the parent is {found.parent}, :dependencies = {found.dependencies}; "
            f"{held} of {len(found.invariants)} invariants held" + (f" ({', '.join(broke)} broke)." if broke else "."))
    recorded = "A recorded run (the tour's race, played when this sandbox first showed the page)."
    return " ".join(s for s in (recorded if found.recorded else "", said) if s)


class RunBody(Body):
    workers: Annotated[int, msgspec.Meta(ge=2, le=8)] = 3
    children: Annotated[int, msgspec.Meta(ge=3, le=16)] = 6
    faults: Annotated[list[Fault], msgspec.Meta(max_length=3)] = msgspec.field(default_factory=list)
    early_release: bool = False
    seed: Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)] = 7

    def plan(self) -> Plan:
        return Plan(self.workers, self.children, tuple(sorted(set(self.faults))), self.early_release, self.seed)


class RaceLab(Widget):
    name = "race"
    title = "Race the workers"
    design = Design(  # DESIGN.md's row
        "Race", ("Run", "Reset"),
        choices=("Workers", "Children", "Seed", "a worker crashes after its claim",
                 "a lease lapses while its worker stalls", "a completion is delivered twice",
                 "use the early-release complete (below)"), groups=("Race controls",))
    queue_parts = ("race",)
    runs_unlocked = True  # Run lets the lock go while the workers race: Reset may stop it
    rows = (PARENT, *child_ids(16))
    reset_text = "Reset: any run stopped, and the flow landed again through the real scripts."
    tour = (
        Step("raced", "A race ran on the course's scripts and every invariant held",
             (do("run", **RECORDED),)),
    )

    async def land(self, turn: Turn, children: int = 6) -> None:
        await flows.add(turn.conn, turn.queue(), flow.spec(PARENT, "ship the order", child_ids(children), "part {i}"))

    async def first_shown(self, turn: Turn) -> None:
        """The tour's race on the flow just landed, under the showing's lock (Reset waits
        for it, at most the time cap): a page without JavaScript shows a recorded run. Its
        workers take turns in the seed's time, so every sandbox and the specimen show one
        timeline, which the visitor's own first frame swaps in for the specimen's unmoved. A run cut
        short (Valkey dropped its workers, the load outran the cap) is refused: the next showing lands
        the flow again and plays it whole."""
        plan = msgspec.convert(RECORDED, RunBody).plan()
        state = keys.state_key(turn.queue())
        ended = await Race(turn.conn, turn.queue(), state, plan, turns=Turns(plan.workers)).run()
        if ended.cut:  # not the run the others show
            raise Busy("the recorded run was cut short; the page plays it again in a moment")
        await turn.conn.hset(state, "run", json.dumps(
            {"status": "done", "ended": ended, "choices": msgspec.to_builtins(plan), "recorded": True}))

    def describe(self, moment: Moment) -> Description:
        found = picture(moment)
        return Description(readout(found), found)

    @reading("released-early")
    def released_early(self, now: Moment, before: Moment) -> Value:
        """"yes" when the parent left awaiting_children before every child was counted."""
        found = {i.id: i for i in picture(now).invariants}
        return "yes" if "released-once" in found and not found["released-once"].held else "no"

    @action("run", "Run", RunBody)
    async def run(self, turn: Turn, body: RunBody) -> Outcome:
        sandbox = turn.sandbox
        if going_clients(turn.moment) is not None:
            raise Refused("A run of this sandbox is still going: wait for it to end, or press Reset.")
        plan = body.plan()
        choices = msgspec.to_builtins(plan)
        await turn.clear()
        await self.land(turn, plan.children)
        state = keys.state_key(turn.queue())
        race = Race(turn.conn, turn.queue(), state, plan)
        clients = await race.connect()
        # `clients`: a Reset in any site process fences the run by them; `by`: whose run this is
        marker = {"status": "running", "until": int((time.time() + CAP_S + 2) * 1000), "choices": choices,
                  "clients": clients, "by": turn.token}
        try:
            await turn.conn.hset(state, mapping={"landed": "1", "run": json.dumps(marker)})
        except BaseException:
            await race.close()
            raise
        await turn.release()  # the race runs without the lock: Reset may stop it, a second Run is refused
        task = asyncio.create_task(race.run())
        RUNS[sandbox] = task
        await asyncio.wait({task})
        if RUNS.get(sandbox) is task:
            RUNS.pop(sandbox, None)
        stopped = Outcome(text="The run was stopped by a Reset.", kind="info")
        if task.cancelled():
            return stopped
        ended = task.result()  # a run that broke raises here
        # the lock again, with the keys the run left (one round trip), and the run still ours: a
        # Reset (here or in another process) leaves it be; its marker says done with the finish
        now = await turn.take()
        if (now.kept("run") or {}).get("by") != turn.token:
            # a Reset (or a step link) that stopped this run said so in the lab state; keys gone without
            # it are Valkey's doing (flushed, or restarted without its data), whoever landed the flow since
            return stopped if now.state.get("stopped") == turn.token else Outcome(
                text="The run's keys are gone from Valkey (flushed, or restarted without its data): its result "
                     "was not kept. Press Reset to land the flow again.", kind="info")
        turn.remember(run={"status": "done", "ended": ended, "choices": choices})
        broken = [i.id for i in invariants(now, plan.children) if not i.held]
        script = "the early-release complete" if plan.early_release else "the course's complete"
        said = (f"broke {', '.join(broken)}" if broken else "every invariant held")
        return Outcome(text=f"Seed {plan.seed}: {plan.workers} workers raced on {script}; the run ended at "
                            f"{ended} and {said}.", kind="refused" if broken else "ok",
                       reached=() if broken or plan.early_release else ("raced",),
                       detail={"seed": plan.seed, "broken": list(broken), "ended": ended})

    async def stop_run(self, turn: Turn) -> str:
        """A run going in this sandbox stopped before its keys are cleared: cancelled here, its
        connections fenced for a call on the wire or a run in another process. Whose run it was: the
        lab state keeps it (`stopped`), so that Run says a Reset stopped it."""
        by = str((turn.moment.kept("run") or {}).get("by") or "")
        running = RUNS.pop(turn.sandbox, None)
        if running is not None:
            running.cancel()
            with contextlib.suppress(BaseException):
                await running
        if clients := going_clients(turn.moment):
            await fence(turn.conn, turn.queue(), clients)
        return by

    @action("reset", "Reset")
    async def reset(self, turn: Turn, body: Body) -> Outcome:
        stopped = await self.stop_run(turn)
        done = await super().reset(turn, body)
        if stopped:  # after the clear, which forgets what was to be kept
            turn.remember(stopped=stopped)
        return done

    @action("goto", "Go to step", base.GotoBody)
    async def goto(self, turn: Turn, body: base.GotoBody) -> Outcome:
        """The tour's step clears the keys as Reset does: a run going stops first (a link that names
        no step is refused before, and stops nothing)."""
        self.step_of(body)
        stopped = await self.stop_run(turn)
        done = await super().goto(turn, body)
        if stopped:
            turn.remember(stopped=stopped)
        return done

    def partial_context(self) -> dict[str, object]:
        return {"early_script": EARLY.source, "early_name": "complete_early_release.lua"}

