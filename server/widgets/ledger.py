"""The bulk ledger: a fixed batch of four flows, added one at a time or in bulk.

"Next flow" adds one flow through `flows.add`, showing the refusal `add_bulk`
swallows; "Run the batch" is one `add_bulk`. The result list is the adds'
return value, kept in the lab state; each flow's card beside it is read from Valkey.
"""

from __future__ import annotations

from typing import Any

import msgspec

from server.emq import flows, jobs, keyspace, pump
from server.emq.errors import EmqError
from server.emq.script import raise_first
from server.emq.shape import FlowShapeError
from server.widgets import base, flow
from server.widgets import ledger_batch as lb
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.flow import plural
from server.widgets.reader import pipelined
from server.widgets.turn import Turn
from server.widgets.view import Moment

PARTS = tuple(f"ledger.{q}" for q in lb.LEDGER_QUEUES)
FLOW4_PARENT = lb.FIXED[3]["parent"]["id"]
MOST_CLAIMS = 16  # one press completes at most this many billing jobs (a console can flood pending)


class Picture(msgspec.Struct, kw_only=True):
    mode: str  # step, batch or own
    move: int
    total: int
    picked: int | None
    result: object  # the adds' result as the lab state keeps it ([[parent, [children]], ...])
    retry: object  # what the retry of flow 4 returned (None: no retry)
    refused: str
    flows: list[lb.FlowCard]


class LedgerWidget(Widget):
    name = "ledger"
    title = "The bulk ledger"
    design = Design(  # DESIGN.md's row
        "ledger", ("Next flow", "Run the batch", "Retry flow 4", "Try an ill-formed id", "Reset",
                   "Flow 1", "Flow 2", "Flow 3", "Flow 4"), groups=("Your own batch",))
    queue_parts = PARTS
    fixed_flows = len(lb.FIXED)  # the template's "Flow N" buttons before the first snapshot
    reset_text = ("Reset: the ledger's queues are empty and so is the result list; start with Next flow "
                  "or Run the batch.")
    tour = (
        Step("flow1", "A same-queue flow landed whole", (do("next"),)),
        Step("flow2", "A cross-queue flow landed, parent first", (do("next"),)),
        Step("refused", "A refused same-queue flow wrote nothing", (do("next"),)),
        Step("held", "A cross-queue flow stopped partway: its parent held", (do("next"),)),
        Step("retried", "Flow 4 retried by its ids", (do("retry-4"),)),
        Step("released", "Flow 4's parent released exactly once", (do("complete-4"),)),
        Step("gate", "An ill-formed id refused the whole batch before any write", (do("ill-formed"),)),
        Step("bulk", "One add_bulk call returned the landed flows in input order", (do("run-batch"),)),
        Step("own", "Your own batch ran through one add_bulk", (do("own-batch", flows=lb.sample_batch()),)),
    )

    def job_ids(self, part: str) -> tuple[str, ...]:
        rel = part.rpartition(".")[2]
        found = [i for spec in (*lb.FIXED, *lb.BAD_BATCH) for i in lb.planned(spec).ids(rel)]
        # the corrected child of flow 4 lands in billing only on a retry
        found += [lb.FLOW4_CHILD_FIXED] if rel == "billing" else []
        return tuple(i for i in dict.fromkeys(found) if lb.well_formed(i))

    def partial_context(self) -> dict[str, object]:
        return {"own_sample": lb.OWN_SAMPLE, "ledger_queues": lb.LEDGER_QUEUES}

    def describe(self, moment: Moment) -> Description:
        led = lb.LedgerState.of(moment.state)
        plans = led.plans()
        views = {q: moment.view(f"ledger.{q}") for q in lb.LEDGER_QUEUES}
        rows = [lb.card(n, plan, views, entry, n <= led.move, led.errors.get(str(n)))
                for n, (plan, entry) in enumerate(zip(plans, lb.entries_of(plans, led.result)), 1)]
        return Description(self.readout(led, rows), Picture(
            mode=led.mode, move=led.move, total=len(rows), picked=led.picked, result=led.result,
            retry=led.retry, refused=led.refused, flows=rows))

    @staticmethod
    def readout(led: lb.LedgerState, rows: list[lb.FlowCard]) -> str:
        if led.mode == "step" and led.move == 0 and all(r.state is None for r in rows):
            return "Before flow 1: the result list is empty and no flow's parent has a row."
        how = {"step": f"Flow {led.move} of {len(rows)} added one at a time",
               "batch": f"After one add_bulk over the {len(rows)} flows",
               "own": f"After your batch of {plural(len(rows), 'flow')}" + (", refused whole by the gate"
                                                                           if led.refused else "")}[led.mode]
        parents = ", ".join(f"{r.number}: {r.word}" for r in rows)
        return f"{how}: {plural(len(led.result), 'entry', 'entries')} in the result; parents — {parents}."

    @reading("flow4-parent")
    def flow4_parent(self, now: Moment, before: Moment) -> Value:
        state = now.view(PARTS[0]).fields(FLOW4_PARENT).get("state")
        return "absent" if state is None else base.FATES.get(state, state)

    @reading("next-is-flow-4")
    def next_is_flow_4(self, now: Moment, before: Moment) -> Value:
        return self.flows_left(now, before) is True and lb.LedgerState.of(now.state).move == 3

    @reading("flows-left")
    def flows_left(self, now: Moment, before: Moment) -> Value:
        led = lb.LedgerState.of(now.state)
        return led.mode == "step" and led.move < len(lb.FIXED)

    @reading("result-size")
    def result_size(self, now: Moment, before: Moment) -> Value:
        return len(lb.LedgerState.of(now.state).result)

    @reading("new-keys")
    def new_keys(self, now: Moment, before: Moment) -> Value:
        old = {name for name, _, _ in before.all_keys()}
        return sum(name not in old for name, _, _ in now.all_keys())

    def placed(self, turn: Turn, specs: Any) -> list[dict[str, Any]]:
        """The flows with each child's relative queue mapped into this sandbox's ledger."""
        return [{**s, "children": [{**c, "queue": turn.queue(f"ledger.{c.get('queue') or 'orders'}")}
                                   for c in s["children"]]} for s in specs]

    def reached(self, n: int, landed: bool, now: Moment) -> tuple[str, ...]:
        """The milestone fixed flow `n` reached, borne out by the keys just read."""
        plan = lb.FIXED_PLAN[n - 1]
        state = now.view(PARTS[0]).fields(plan.parent).get("state")
        if n in (1, 2) and landed:
            return (f"flow{n}",)
        if n == 3 and not landed and not any(now.view(PARTS[0]).row(i) for i in plan.ids("orders")):
            return ("refused",)
        return ("held",) if n == 4 and not landed and state == "awaiting_children" else ()

    async def add_one(self, turn: Turn, led: lb.LedgerState, n: int) -> str | None:
        """Add fixed flow `n` through flows.add; its refusal (add_bulk drops it), if refused."""
        try:
            parent, children = await flows.add(turn.conn, turn.queue(PARTS[0]), self.placed(turn, [lb.FIXED[n - 1]])[0])
        except EmqError as exc:
            led.errors[str(n)] = str(exc)
            return str(exc)
        led.result.append([parent, children])
        return None

    @action("next", "Next flow")
    async def next_flow(self, turn: Turn, body: Body) -> Outcome:
        led = lb.LedgerState.of(turn.moment.state)
        if led.mode == "own":
            return info("Your own batch is on the ledger: press Reset to step the fixed four.")
        if led.move >= len(lb.FIXED):
            return info("All four flows are on the ledger: press Previous flow, Run the batch or Reset.")
        n = led.move + 1
        error = await self.add_one(turn, led, n)
        led.mode, led.move, led.picked = "step", n, n
        turn.remember(**led.kept())
        reached = self.reached(n, error is None, await turn.read())
        if error:
            return Outcome(text=f"Flow {n}: flows.add refused it with {error}; add_bulk would drop it from the "
                                "result.", kind="refused", reached=reached, detail={"flow": n, "error": error})
        entry = led.result[-1]
        return Outcome(text=f"Flow {n}: flows.add returned ({entry[0]}, [{', '.join(entry[1])}]).",
                       reached=reached, detail={"flow": n})

    @action("previous", "Previous flow")
    async def previous_flow(self, turn: Turn, body: Body) -> Outcome:
        back = max(0, lb.LedgerState.of(turn.moment.state).move - 1)
        # one move back is the ledger rebuilt: cleared, then flows 1..back added again
        await turn.clear()
        led = lb.LedgerState(move=back, picked=back or None)
        for n in range(1, back + 1):
            await self.add_one(turn, led, n)
        turn.remember(**led.kept())
        if back == 0:
            return Outcome(text="Back before flow 1: the ledger's queues were cleared; the result list is empty.")
        return Outcome(text=f"Back to flow {back}: the ledger was cleared and flows 1 to {back} added again "
                            "through flows.add.", detail={"flow": back})

    @action("run-batch", "Run the batch")
    async def run_batch(self, turn: Turn, body: Body) -> Outcome:
        await turn.clear()  # the batch starts on an empty ledger: what was there is gone
        landed = await flows.add_bulk(turn.conn, turn.queue(PARTS[0]), self.placed(turn, lb.FIXED))
        led = lb.LedgerState(mode="batch", move=len(lb.FIXED), result=[[p, c] for p, c in landed])
        turn.remember(**led.kept())
        now = await turn.read()
        parents = [p for p, _ in landed]
        reached = ("bulk", *(m for n, plan in enumerate(lb.FIXED_PLAN, 1)
                             for m in self.reached(n, plan.parent in parents, now)))
        return Outcome(text=f"Cleared the ledger, then one add_bulk over the {len(lb.FIXED)} flows returned "
                            f"{plural(len(landed), 'entry', 'entries')} in input order: {', '.join(parents)}.",
                       reached=reached, detail={"landed": parents})

    @action("pick", "Flow N", lb.PickBody)
    async def pick(self, turn: Turn, body: lb.PickBody) -> Outcome:
        total = len(lb.LedgerState.of(turn.moment.state).plans())
        if body.flow > total:
            return info(f"The ledger holds {plural(total, 'flow')}: there is no flow {body.flow}.")
        turn.remember(picked=body.flow)
        return Outcome(text=f"Flow {body.flow} picked: its card shows its entry in the result and its keys as "
                            "Valkey holds them.", kind="info", detail={"flow": body.flow})

    @action("retry-4", "Retry flow 4")
    async def retry_four(self, turn: Turn, body: Body) -> Outcome:
        led = lb.LedgerState.of(turn.moment.state)
        if led.mode == "own":
            return info("Your own batch is on the ledger: press Reset to bring back flow 4.")
        if turn.moment.view(PARTS[0]).row(FLOW4_PARENT) is None:
            return info("Flow 4's parent has no row yet: add flow 4 with Next flow, or Run the batch.")
        try:
            parent, children = await flows.add(turn.conn, turn.queue(PARTS[0]),
                                               self.placed(turn, [lb.FLOW4_CORRECTED])[0])
        except EmqError as exc:
            return Outcome(text=f"flows.add refused the retry of flow 4: {exc}.", kind="refused")
        led.retry, led.picked = [parent, children], 4
        turn.remember(**led.kept())
        return Outcome(text=f"Retried flow 4 by its ids, the bad child corrected to {lb.FLOW4_CHILD_FIXED}: "
                            f"flows.add returned ({parent}, [{', '.join(children)}]).", reached=("retried",))

    @action("complete-4", "Complete the retried children")
    async def complete_four(self, turn: Turn, body: Body) -> Outcome:
        if lb.LedgerState.of(turn.moment.state).mode == "own":
            return info("Your own batch is on the ledger: press Reset to bring back flow 4.")
        billing, view = turn.queue(PARTS[2]), turn.moment.view(PARTS[2])
        # a press cut short may have left a claimed child (with its row): finished with its row's token
        claimed = [(j, int(view.fields(j).get("attempts") or 0)) for j in view.members("active")
                   if lb.well_formed(j) and view.row(j) is not None]
        done: list[str] = []
        while len(done) < MOST_CLAIMS and (got := claimed.pop(0) if claimed else
                                           await jobs.claim(turn.conn, billing)) is not None:
            await jobs.complete(turn.conn, billing, got[0], got[1], f"billed {got[0]}", tail=turn.after)
            done.append(got[0])
        if not done:
            return info("No child waits in ledger.billing: flow 4's children have not landed yet, or are "
                        "completed already.")
        # the children's completions wait in billing's outbox until the Pump delivers them
        delivered = await pump.deliver_flow_completions(turn.conn, billing, 100,
                                                        accept=flow.trusted_by(turn.sandbox))
        state = (await turn.read()).view(PARTS[0]).fields(FLOW4_PARENT).get("state")
        return Outcome(text=f"Completed {', '.join(done)} in ledger.billing; one Pump tick delivered "
                            f"{plural(delivered, 'completion')} to their parents.",
                       reached=("released",) if state == "pending" else (),
                       detail={"completed": done, "delivered": delivered})

    @action("ill-formed", "Try an ill-formed id")
    async def ill_formed(self, turn: Turn, body: Body) -> Outcome:
        try:
            await flows.add_bulk(turn.conn, turn.queue(PARTS[0]), self.placed(turn, lb.BAD_BATCH))
        except keyspace.BadId as exc:
            said = str(exc)
        else:
            said = ""  # the gate let it through: the keys below say what landed
        before = turn.moment
        now = await turn.read()
        same = now.all_keys() == before.all_keys()
        new = int(self.new_keys(now, before) or 0)
        words = "no key changed" if same else f"yet the keys changed meanwhile ({plural(new, 'new key')})"
        if not said:
            return info(f"add_bulk did not refuse the batch; {words}.")
        return Outcome(text=f"add_bulk raised BadId for {lb.BAD_ID!r} in flow 2 before any write: flow 1, "
                            f"well-formed, did not land either; {words}.", kind="refused",
                       reached=("gate",) if same else (), detail={"error": said, "new_keys": new})

    @action("own-batch", "Run your batch", lb.OwnBatch)
    async def own_batch(self, turn: Turn, body: lb.OwnBatch) -> Outcome:
        specs = [msgspec.to_builtins(f) for f in body.flows]  # its queues still relative
        plans = [lb.planned(s) for s in specs]
        await turn.clear()  # like Run the batch, yours starts on an empty ledger
        # the learner's ids are not in job_ids: their rows go in each queue's index (ledger_batch)
        raise_first(await pipelined(turn.conn, lb.index_commands(plans, lambda rel: turn.queue(f"ledger.{rel}"))))
        led = lb.LedgerState(mode="own", move=len(plans), batch=[p.as_json() for p in plans])
        try:
            landed = await flows.add_bulk(turn.conn, turn.queue(PARTS[0]), self.placed(turn, specs))
        except (keyspace.BadId, FlowShapeError) as exc:
            led.refused = str(exc)
            turn.remember(**led.kept())
            empty = not any(v.keys for v in (await turn.read()).views.values())
            return Outcome(text=f"Cleared the ledger; add_bulk then refused your whole batch before any write: "
                                f"{led.refused[:160]}.", kind="refused",
                           reached=("own", "gate") if empty else ("own",), detail={"error": led.refused})
        led.result = [[p, c] for p, c in landed]
        turn.remember(**led.kept())
        return Outcome(text=f"Cleared the ledger, then one add_bulk over your {plural(len(plans), 'flow')} "
                            f"returned {plural(len(landed), 'entry', 'entries')}: "
                            f"{', '.join(p for p, _ in landed) or 'none'}.", reached=("own",),
                       detail={"landed": [p for p, _ in landed]})
