"""Race the workers: real workers on one flow, faults from a seed, invariants from the keys.

"Run" lands a fresh flow (a parent held on the chosen children), marks the
run in the lab state and lets go of the widget's lock, so Reset can stop it
and a second Run is refused (409) while it goes; the workers
(`race_run.Race`) write the timeline as Valkey answers. The answer comes when
the run is over, so a prediction is judged on what Valkey holds after it.
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
from server.widgets import race_judge
from server.widgets.base import Body, Description, Design, Outcome, Refused, Step, Value, Widget, action, do, reading
from server.widgets.race_run import EARLY, PARENT, Plan, Race, child_ids, deadline_ms
from server.widgets.turn import Turn
from server.widgets.view import Moment

Fault = Literal["crash", "lapse", "twice"]
# the runs going in this process, by sandbox: Reset stops its sandbox's run
RUNS: dict[str, asyncio.Task[str]] = {}
# the tour's race, played on a sandbox's first showing: the recorded run a page shows before any Run
RECORDED: dict[str, object] = {"workers": 3, "children": 6, "faults": ["crash", "lapse", "twice"], "seed": 2}


class RunBody(Body):
    workers: Annotated[int, msgspec.Meta(ge=2, le=8)] = 3
    children: Annotated[int, msgspec.Meta(ge=3, le=16)] = 6
    faults: Annotated[list[Fault], msgspec.Meta(max_length=3)] = msgspec.field(default_factory=list)
    early_release: bool = False
    seed: Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)] = 7


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
        await flows.add(turn.conn, turn.queue(), {
            "parent": {"id": PARENT, "payload": "ship the order"},
            "children": [{"id": c, "payload": f"part {i}"} for i, c in enumerate(child_ids(children), 1)],
        })

    async def first_shown(self, turn: Turn) -> None:
        """The tour's race on the flow just landed, under the showing's lock (Reset waits
        for it, at most the time cap): a page without JavaScript shows a recorded run."""
        body = msgspec.convert(RECORDED, RunBody)
        plan = Plan(body.workers, body.children, tuple(sorted(body.faults)), False, body.seed)
        state = keys.state_key(turn.queue())
        ended = await Race(turn.conn, turn.queue(), state, plan).run()
        await turn.conn.hset(state, "run", json.dumps(
            {"status": "done", "ended": ended, "choices": _choices(plan), "recorded": True}))

    def describe(self, moment: Moment) -> Description:
        found = race_judge.picture(moment)
        return Description(race_judge.readout(found), found)

    @reading("released-early")
    def released_early(self, now: Moment, before: Moment) -> Value:
        """"yes" when the parent left awaiting_children before every child was counted."""
        found = {i.id: i for i in race_judge.picture(now).invariants}
        return "yes" if "released-once" in found and not found["released-once"].held else "no"

    @action("run", "Run", RunBody)
    async def run(self, turn: Turn, body: RunBody) -> Outcome:
        sandbox = turn.sandbox
        going = turn.moment.kept("run") or {}
        if going.get("status") == "running" and int(going.get("until") or 0) > time.time() * 1000:
            raise Refused("A run of this sandbox is still going: wait for it to end, or press Reset.")
        plan = Plan(body.workers, body.children, tuple(sorted(set(body.faults))), body.early_release, body.seed)
        choices = _choices(plan)
        await turn.clear()
        await self.land(turn, plan.children)
        state = keys.state_key(turn.queue())
        marker = {"status": "running", "until": deadline_ms(), "choices": choices}
        await turn.conn.hset(state, mapping={"landed": "1", "run": json.dumps(marker)})
        await turn.release()  # the race runs without the lock: Reset may stop it, a second Run is refused
        race = Race(turn.conn, turn.queue(), state, plan)
        task = asyncio.create_task(race.run())
        RUNS[sandbox] = task
        await asyncio.wait({task})
        if RUNS.get(sandbox) is task:
            RUNS.pop(sandbox, None)
        if task.cancelled():
            return Outcome(text="The run was stopped by a Reset.", kind="info")
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
        ended = task.result()
        await turn.conn.hset(state, "run", json.dumps({"status": "done", "ended": ended, "choices": choices}))
        found = race_judge.picture(await turn.read())
        broken = [i.id for i in found.invariants if not i.held]
        script = "the early-release complete" if plan.early_release else "the course's complete"
        said = (f"broke {', '.join(broken)}" if broken else "every invariant held")
        return Outcome(text=f"Seed {plan.seed}: {plan.workers} workers raced on {script}; the run ended at "
                            f"{ended} and {said}.", kind="refused" if broken else "ok",
                       reached=() if broken or plan.early_release else ("raced",),
                       detail={"seed": plan.seed, "broken": list(broken), "ended": ended})

    @action("reset", "Reset")
    async def reset(self, turn: Turn, body: Body) -> Outcome:
        running = RUNS.pop(turn.sandbox, None)
        if running is not None:
            running.cancel()
            with contextlib.suppress(BaseException):
                await running
        return await super().reset(turn, body)

    def partial_context(self) -> dict[str, object]:
        return {"early_script": EARLY.source, "early_name": "complete_early_release.lua"}


def _choices(plan: Plan) -> dict[str, object]:
    """A run's choices as the lab state keeps them: every page shows the same ones."""
    return {"workers": plan.workers, "children": plan.children, "faults": list(plan.faults),
            "early_release": plan.early_release, "seed": plan.seed}
