"""The bulk ledger: a fixed batch of four flows, added one at a time or in bulk.

"Next flow" adds the next flow through `flows.add` (what `add_bulk` does per
flow); "Previous flow" clears the ledger's queues and replays the flows before
it; "Run the batch" clears and runs `flows.add_bulk` once on all four. The
result list is the adds' return value (kept in the lab hash); every parent
state beside it is read from Valkey. "Retry flow 4" re-adds flow 4 by its ids
with the bad child corrected, and "Complete the retried children" claims,
completes and pumps them, so the parent is released exactly once.
"Try an ill-formed id" and the `custom-batch` action show the id gate: a bad
batch is refused before any write. The batch model (ids, paths, the learner's
own batch) lives in `ledger_batch.py`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from server.emq import flows, jobs, keyspace, pump
from server.emq.errors import EmqError
from server.settings import Settings
from server.widgets.base import Context, Outcome, Widget, action, tour_step_of, whole
from server.widgets.flow import plural
from server.widgets.ledger_batch import (
    BAD_BATCH,
    FIXED,
    FLOW4_CHILD_FIXED,
    LEDGER_QUEUES,
    custom_flows,
    flow4_corrected,
    flow_ids,
    flow_status,
    resolve,
)
from server.widgets.results_reader import fingerprint
from server.widgets.snapshot import QueueView

# Limits for learner-supplied batches; the widget has no request, so it reads
# them from the environment once, like the app does.
LIMITS = Settings.from_env()


class Ledger(Widget):
    name = "ledger"
    # the template draws one "Flow N" button per flow of the fixed batch (the
    # page then follows the batch on the ledger, read from Valkey)
    fixed_flows = len(FIXED)
    title = "The bulk ledger"
    queue_parts = tuple(("ledger", q) for q in LEDGER_QUEUES)
    limits: Settings = LIMITS
    # Flow after flow as add_bulk would add them, then flow 4 retried by its
    # ids and run to its release, then the id gate refusing a whole batch.
    tour = ("next", "next", "next", "next", "retry-4", "complete-4", "ill-formed")
    labels: ClassVar[dict[str, str]] = {"next": "Next flow", "previous": "Previous flow", "run-batch": "Run the batch",
              "retry-4": "Retry flow 4", "complete-4": "Complete the retried children",
              "ill-formed": "Try an ill-formed id", "pick": "Flow N", "reset": "Reset"}

    def job_ids(self, queue: str) -> list[str]:
        rel = queue.rsplit(".", 1)[-1]
        # the corrected child of flow 4 lands in billing only on a retry
        extra = [FLOW4_CHILD_FIXED] if rel == "billing" else []
        return [*flow_ids([*FIXED, *BAD_BATCH], rel), *extra]

    # -- state ----------------------------------------------------------------
    def batch(self, state: dict[str, str]) -> list[dict[str, Any]]:
        """The batch on the page: the fixed four, or the learner's own."""
        return json.loads(state["custom"]) if state.get("custom") else FIXED

    async def read_views(self, ctx: Context, state: dict[str, str]) -> list[QueueView]:
        # The fixed ids plus those of a learner's batch: a held parent is in
        # no state set, so the snapshot must be told to look for its row.
        return await self.views(ctx, {q: self.ids(q, state) for q in self.queues(ctx)})

    def ids(self, queue: str, state: dict[str, str]) -> list[str]:
        """The fixed ids plus those of a learner's batch on `queue`."""
        rel = queue.rsplit(".", 1)[-1]
        return list(dict.fromkeys([*self.job_ids(queue), *flow_ids(self.batch(state), rel)]))

    async def ids_after(self, ctx: Context) -> dict[str, list[str]]:
        state = await self.state(ctx)  # the batch the action left on the ledger
        return {queue: self.ids(queue, state) for queue in self.queues(ctx)}

    async def snapshot(self, ctx: Context) -> dict[str, Any]:
        state = await self.state(ctx)
        return self.compose(await self.read_views(ctx, state), state)

    async def record(self, ctx: Context, mode: str, move: int, result: list[Any], **extra: Any) -> None:
        fields = {"landed": "1", "mode": mode, "move": str(move), "result": result,
                  "errors": {}, "retry": "", "picked": "", "custom": "", **extra}
        await self.remember(ctx, **fields)

    async def land(self, ctx: Context) -> None:
        # The ledger starts before flow 1: nothing landed, an empty result.
        await self.record(ctx, "step", 0, [])

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        batch = self.batch(state)
        mode = state.get("mode") or "step"
        move = int(state.get("move") or 0)
        result = json.loads(state.get("result") or "[]")
        errors = json.loads(state.get("errors") or "{}")
        retry = json.loads(state["retry"]) if state.get("retry") else None
        picked = int(state["picked"]) if state.get("picked") else None
        by_rel = dict(zip(LEDGER_QUEUES, views))
        if retry and not state.get("custom"):
            # once retried, flow 4's second child is the corrected one
            batch = [*batch[:3], flow4_corrected()]
        rows = [
            flow_status(n, flow, by_rel, result, tried=n <= move, error=errors.get(str(n)),
                        retry=retry if n == 4 else None)
            for n, flow in enumerate(batch, 1)
        ]
        how = {"step": f"flow {move} of {len(batch)} added one at a time",
               "batch": "the batch run by one add_bulk", "custom": "your batch run by one add_bulk"}[mode]
        if mode == "step" and move == 0:
            readout = "Before flow 1: nothing landed, the result list is empty."
        else:
            # one word per parent, read from its row: the ledger at a glance
            parents = ", ".join(f"flow {r['number']} {r['state'] or 'no row'}" for r in rows)
            readout = (f"After {how}: {plural(len(result), 'flow')} in the result; "
                       f"parents — {parents}.")
        return {
            "readout": readout,
            "picture": {"mode": mode, "move": move, "total": len(batch), "picked": picked,
                        "result": result, "retry": retry, "flows": rows},
        }

    async def line(self, ctx: Context, n: int) -> str:
        state = await self.state(ctx)
        return str(self.describe(await self.read_views(ctx, state), state)["picture"]["flows"][n - 1]["line"])

    # -- stepping -------------------------------------------------------------
    async def add_one(self, ctx: Context, n: int) -> str | None:
        """Add fixed flow `n` through flows.add; the refusal text, if refused."""
        state = await self.state(ctx)
        result, errors = json.loads(state.get("result") or "[]"), json.loads(state.get("errors") or "{}")
        try:
            parent, children = await flows.add(ctx.conn, self.queues(ctx)[0], resolve(ctx, FIXED[n - 1]))
            result.append([parent, children])
            error = None
        except EmqError as exc:
            error = errors[str(n)] = str(exc)  # add_bulk drops it; the stepper shows it
        await self.remember(ctx, mode="step", move=str(n), result=result, errors=errors, picked=str(n))
        return error

    async def run_to(self, ctx: Context, n: int) -> Outcome:
        await self.clear(ctx)
        await self.record(ctx, "step", 0, [])
        for i in range(1, n + 1):
            await self.add_one(ctx, i)
        if n == 0:
            return Outcome("Back before flow 1: the ledger's queues are empty and the result list too.")
        return Outcome(f"Replayed flows 1 to {n} on Valkey. {await self.line(ctx, n)}")

    @action("next")
    async def next_flow(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        move = int(state.get("move") or 0)
        if state.get("custom"):
            return Outcome("Your own batch is on the ledger; press Reset to step the fixed batch.", "info")
        if move >= len(FIXED):
            return Outcome("All four flows have been added. Press Previous flow or Reset.", "info")
        error = await self.add_one(ctx, move + 1)
        said = (f"flows.add refused it with {error}; it is dropped from the result." if error
                else "flows.add returned its entry.")
        return Outcome(f"Flow {move + 1}: {said} {await self.line(ctx, move + 1)}", "refused" if error else "ok")

    @action("previous")
    async def previous_flow(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        return await self.run_to(ctx, max(0, int(state.get("move") or 0) - 1))

    @action("goto")
    async def goto(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """`#ledger-step=N`: up to flow 4, a native replay of flows 1..N; past
        it, the tour's retry and gate steps replayed click by click."""
        step, note = tour_step_of(body, len(self.tour))
        if step > len(FIXED):
            outcome = await self.replay(ctx, step)
            return Outcome(note + outcome.text, outcome.kind, outcome.detail)
        outcome = await self.run_to(ctx, step)
        return Outcome(f"Step {step} of {len(self.tour)}. {outcome.text}",
                       outcome.kind, outcome.detail)

    @action("run-batch")
    async def run_batch(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        await self.clear(ctx)
        landed = await flows.add_bulk(ctx.conn, self.queues(ctx)[0], [resolve(ctx, f) for f in FIXED])
        await self.record(ctx, "batch", len(FIXED), [[p, c] for p, c in landed])
        return Outcome(
            f"One add_bulk call ran all {len(FIXED)} flows and returned "
            f"{plural(len(landed), 'entry', 'entries')}, in input order: "
            + ", ".join(p for p, _ in landed) + ". Pick a flow to see what it left.",
            detail={"result": landed},
        )

    @action("pick")
    async def pick(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        n = whole(body, "flow", 1, len(self.batch(state)))
        await self.remember(ctx, picked=str(n))
        return Outcome(await self.line(ctx, n), "info", {"flow": n})

    # -- flow 4: retry by id, then run it to its release ------------------------
    @action("retry-4")
    async def retry_four(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        orders = self.queues(ctx)[0]
        parent_id = FIXED[3]["parent"]["id"]
        if state.get("custom") or not await ctx.conn.exists(keyspace.job_key(orders, parent_id)):
            return Outcome("Flow 4 has not been tried yet: step to it with Next flow, or Run the batch.", "info")
        try:
            landed = await flows.add(ctx.conn, orders, resolve(ctx, flow4_corrected()))
        except EmqError as exc:
            return Outcome(f"The retry was refused: {exc}. {await self.line(ctx, 4)}", "refused")
        await self.remember(ctx, retry=[landed[0], landed[1]], picked="4")
        return Outcome(
            f"Retried flow 4 by its ids with the second child corrected to {FLOW4_CHILD_FIXED}: flows.add returned "
            f"({landed[0]}, [{', '.join(landed[1])}]). {await self.line(ctx, 4)}",
            detail={"retry": landed},
        )

    @action("complete-4")
    async def complete_four(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        if (await self.state(ctx)).get("custom"):
            return Outcome("Your own batch is on the ledger; press Reset to bring back flow 4.", "info")
        billing = ctx.queue("ledger", "billing")
        done: list[str] = []
        while (claimed := await jobs.claim(ctx.conn, billing)) is not None:
            job_id, token = claimed
            await jobs.complete(ctx.conn, billing, job_id, token, f"billed {job_id}")
            done.append(job_id)
        if not done:
            return Outcome("No child of flow 4 is waiting in ledger.billing's pending.", "info")
        # the children live on another slot: their completions wait in
        # billing's outbox until the Pump delivers them on the parent's slot
        delivered = await pump.deliver_flow_completions(ctx.conn, billing, 100)
        again = await pump.deliver_flow_completions(ctx.conn, billing, 100)
        await self.remember(ctx, picked="4")
        return Outcome(
            f"Claimed and completed {', '.join(done)}; the Pump delivered {plural(delivered, 'completion')} "
            f"(a second tick delivered {again}). {await self.line(ctx, 4)}",
            detail={"completed": done, "delivered": delivered, "second_tick": again},
        )

    # -- the id gate ----------------------------------------------------------
    @action("ill-formed")
    async def ill_formed(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queues = self.queues(ctx)
        before = fingerprint(await self.views(ctx))
        try:
            await flows.add_bulk(ctx.conn, queues[0], [resolve(ctx, f) for f in BAD_BATCH])
            raised = "nothing (unexpected)"
        except keyspace.BadId as exc:
            raised = f"BadId ({exc})"
        after = fingerprint(await self.views(ctx))
        same = before == after
        proof = f"nothing landed: the ledger's {after[0]} keys are unchanged" if same else "the keys changed"
        return Outcome(
            f"An add_bulk call on a batch of {len(BAD_BATCH)} flows whose second has the id 'JOB bad}}' "
            f"raised {raised} "
            f"before any write; {proof}, and the well-formed first flow did not land either.",
            "refused", {"keys": after[0], "unchanged": same},
        )

    @action("custom-batch")
    async def custom_batch(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        batch = custom_flows(body, self.limits)  # BadInput before anything is written
        await self.clear(ctx)
        landed = await flows.add_bulk(ctx.conn, self.queues(ctx)[0], [resolve(ctx, f) for f in batch])
        await self.record(ctx, "custom", len(batch), [[p, c] for p, c in landed], custom=batch)
        return Outcome(
            f"One add_bulk call ran your {plural(len(batch), 'flow')} and returned "
            f"{plural(len(landed), 'entry', 'entries')}: "
            + (", ".join(p for p, _ in landed) or "none") + ".",
            detail={"result": landed},
        )

