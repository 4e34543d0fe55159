"""The fan-in counter: a parent held on three children, released at zero.

Claiming and completing are two steps, as they are for a worker: "Claim" runs
the real `claim` (the child enters `active` with its token and lease
deadline), "Complete child" runs the real `complete` for the claimed child the
learner picks (claiming one first when none is claimed, so one click still
counts one child down). The guards inside `complete` are made to answer for
real: a completion carrying a stale token while the row exists
(`EMQSTALE`), a late completion after the lease lapsed (`requeue_lapsed`
puts the child back in pending; claimed again it carries token 2), and the
branch where the token matches but the child is no longer in `active` (the
script answers 1 and skips the fan-in). Each outcome names the script's
reply and the keys two readings found changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from server.emq import jobs, keyspace
from server.emq.errors import EmqError
from server.widgets import flow, snapshot
from server.widgets.base import BadInput, Context, Outcome, action
from server.widgets.fanin_reading import (
    CHILDREN,
    PARENT,
    Peek,
    claimed,
    line_of,
    parent_status,
    readout,
    result_of,
)
from server.widgets.keydiff import diff_words, key_diff
from server.widgets.one_flow import OneFlow
from server.widgets.snapshot import QueueView

LEASE_MS = 30_000


@dataclass(frozen=True)
class Sent:
    """A completion sent as a worker would: the script's answer, the counter
    before and after, and the keys two readings found changed."""

    child: str
    answer: str
    before: int
    after: int
    changed: list[str]

    def outcome(self, said: str, answer: str | None = None) -> Outcome:
        """The refused outcome every replayed completion gets: `said`, then what changed."""
        return Outcome(f"{said}; {diff_words(self.changed)}.", "refused",
                       {"child": self.child, "answer": answer or self.answer, "before": self.before,
                        "after": self.after, "changed": self.changed})


def flow_spec() -> dict[str, Any]:
    return {
        "parent": {"id": PARENT, "payload": "build the report"},
        "children": [{"id": c, "payload": f"part {i}"} for i, c in enumerate(CHILDREN, 1)],
    }


class FanIn(OneFlow):
    name = "fanin"
    title = "The fan-in counter"
    queue_parts = (("fanin",),)
    # `#fanin-step=N` and the static trace: claim and complete, a stale token,
    # a redelivery, a lease that lapses and a late completion refused by the
    # fence, and a late completion the fan-in skips because the child is not
    # in active.
    tour = ("complete-child", "redeliver", "claim", "stale", "lapse", "claim", "late",
            "complete-child", "claim", "lapse", "late")
    labels: ClassVar[dict[str, str]] = {
              "claim": "Claim", "complete-child": "Complete child", "stale": "Complete with a stale token",
              "lapse": "Let the lease lapse", "late": "Send the late completion",
              "redeliver": "Redeliver last completion", "reset": "Reset"}

    parent, children = PARENT, CHILDREN

    def flow_spec(self) -> dict[str, Any]:
        return flow_spec()

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        view = views[0]
        status = parent_status(view)
        active = claimed(view)
        tokens = {a["id"]: a for a in active}
        children = []
        for child in flow.read_flow(view, PARENT, [(view, c) for c in CHILDREN]).children:
            row = view.row(child.id)
            children.append({**child.as_json(), "token": row.value.get("attempts") if row else None,
                             "deadline": tokens[child.id]["deadline"] if child.id in tokens else None})
        last = json.loads(state["last"]) if state.get("last") else None
        lapsed = json.loads(state["lapsed"]) if state.get("lapsed") else None
        return {
            "readout": readout(status, len(CHILDREN), active),
            "picture": {"parent": {"id": PARENT, **status}, "children": children, "active": active,
                        "last": last, "lapsed": lapsed},
        }

    # -- reading -------------------------------------------------------------
    async def view(self, ctx: Context) -> QueueView:
        return await snapshot.read_queue(ctx.conn, self.queues(ctx)[0], self.job_ids(self.queues(ctx)[0]))

    async def peek(self, ctx: Context) -> Peek:
        """What the actions decide on: the queue's keys, read by one script
        call (the snapshot's), so each child's row comes along with them."""
        queue = self.queues(ctx)[0]
        view = ctx.take_start() or await snapshot.read_queue(ctx.conn, queue, self.job_ids(queue))
        found = {cid: view.row(cid) for cid in CHILDREN}
        rows = {cid: (row.value if row is not None else {}) for cid, row in found.items()}
        deps, parent = view.row(PARENT, ":dependencies"), view.row(PARENT)
        # active is scored by lease deadline: its head is the oldest claim;
        # pending's head is the one claim takes (lowest score first)
        return Peek(active=view.members("active"), head=next(iter(view.members("pending")), None),
                    dependencies=int(deps.value) if deps is not None else 0,
                    tokens={c: int(rows[c].get("attempts") or 0) for c in CHILDREN}, rows=rows,
                    pending=view.members("pending"),
                    parent_state=parent.value.get("state") if parent is not None else None)

    @staticmethod
    def chosen(peek: Peek, body: dict[str, Any]) -> tuple[str, int] | None:
        """The claimed child the learner picked (or the oldest claim) and the
        token its row holds; None when it is not claimed."""
        child = body.get("child")
        if child is not None and child not in CHILDREN:
            raise BadInput(f"'child' must be one of: {', '.join(CHILDREN)}")
        pick = child if child is not None else next(iter(peek.active), None)
        if pick is None or pick not in peek.active or pick not in CHILDREN:
            return None
        return pick, peek.tokens[pick]

    async def claim_and_complete(self, ctx: Context, peek: Peek) -> tuple[tuple[str, int] | None, bool]:
        """Claim the next pending child and complete it, in one round trip
        when the head is a child (`jobs.claim_and_complete`: the lock's read
        names the job claim takes and its token), or in none of its own: the
        action's closing one (`closing.py`)."""
        head = peek.head
        if head not in CHILDREN:
            return None, False
        queue = self.queues(ctx)[0]
        line = line_of(queue, peek, head)
        if line is None:  # no row to read the lineage from: claim alone, complete after
            return await self.claim_child(ctx, peek), False
        expected = (head, peek.tokens[head] + 1)
        if ctx.closing is not None:
            # both ride the closing round trip; the outcome stands once the parent counted the child
            jobs.queue_claim_and_complete(ctx.closing.batch, queue, expected, result_of(head), line=line,
                                          lease_ms=LEASE_MS, tail=ctx.tail)
            ctx.closing.prove("HGET", keyspace.processed_key(queue, PARENT), head)
            return expected, True
        return await jobs.claim_and_complete(ctx.conn, queue, expected, result_of(head), line=line,
                                             lease_ms=LEASE_MS, tail=ctx.tail)

    async def claim_child(self, ctx: Context, peek: Peek) -> tuple[str, int] | None:
        """Claim the next pending child, never the parent once it is released."""
        if peek.head not in CHILDREN:
            return None
        return await jobs.claim(ctx.conn, self.queues(ctx)[0], LEASE_MS)

    # -- actions -------------------------------------------------------------
    @action("claim")
    async def claim(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        peek = await self.peek(ctx)
        got = await self.claim_child(ctx, peek)
        if got is None:
            return Outcome("No child is waiting in pending: Claim takes only children, never the parent.", "info")
        job_id, token = got
        return Outcome(
            f"Claimed {job_id}: it is in active with token {token} and a lease of {LEASE_MS // 1000} s; "
            f":dependencies is still {peek.dependencies} (claiming counts nothing).",
            detail={"child": job_id, "token": token},
        )

    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        peek = await self.peek(ctx)
        got = self.chosen(peek, body)
        done = False
        if got is None:
            if body.get("child") is not None:
                return Outcome(f"{body['child']} is not in active: claim it first.", "info")
            got, done = await self.claim_and_complete(ctx, peek)
            if got is None:
                return Outcome("No child is claimed or waiting in pending; the parent was released or "
                               "is stuck. Reset to start again.", "info")
        job_id, token = got
        before = peek.dependencies
        result = result_of(job_id)
        if not done:
            await jobs.complete(ctx.conn, queue, job_id, token, result, line=line_of(queue, peek, job_id),
                                tail=ctx.tail)
        # the counter and the parent as the outcome is recorded: no read-back
        clause, reads = flow.after_signal(queue, PARENT, before)
        return Outcome(
            f"Completed {job_id} with token {token}: {clause}.",
            detail={"child": job_id, "token": token, "dependencies": "{{=deps}}", "parent_state": "{{=parent}}"},
            # remembered for "Redeliver", with the outcome in the action's last round trip
            keep={"last": {"id": job_id, "token": token, "result": result}},
            reads=reads,
        )

    async def send(self, ctx: Context, job_id: str, token: int, result: str) -> Sent:
        """Run `complete` as a worker would; what it answered and what changed."""
        queue = self.queues(ctx)[0]
        before_view = ctx.take_start() or await self.view(ctx)
        try:
            await jobs.complete(ctx.conn, queue, job_id, token, result)
            answer = "1"
        except jobs.Gone:
            answer = "0 (gone: no row)"
        except EmqError as exc:
            answer = str(exc)
        after_view = await self.view(ctx)
        before, after = (parent_status(v)["dependencies"] or 0 for v in (before_view, after_view))
        return Sent(job_id, answer, before, after, key_diff(before_view, after_view))

    @action("stale")
    async def stale(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        got = self.chosen(await self.peek(ctx), body)
        if got is None:
            return Outcome("No child is in active: Claim one first, then send its completion with a stale token.",
                           "info")
        job_id, token = got
        sent = await self.send(ctx, job_id, token - 1, result_of(job_id))
        return sent.outcome(f"Completed {job_id} with the stale token {token - 1} while its row holds attempts "
                            f"{token}: the script answered {sent.answer}; :dependencies {sent.before} → {sent.after}")

    @action("lapse")
    async def lapse(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        got = self.chosen(await self.peek(ctx), body)
        if got is None:
            return Outcome("No child is in active, so there is no lease to lapse: Claim one first.", "info")
        job_id, token = got
        # The worker went quiet: wind its deadline back to the epoch instead of
        # waiting 30 s; requeue_lapsed then compares it with the server clock.
        await ctx.conn.zadd(keyspace.queue_key(queue, "active"), {job_id: 1}, xx=True)
        requeued = await jobs.requeue_lapsed(ctx.conn, queue)
        await self.remember(ctx, lapsed={"id": job_id, "token": token})
        return Outcome(
            f"The lease of {job_id} (token {token}) ran out: requeue_lapsed answered [{', '.join(requeued)}] "
            f"and put it back in pending. Its first worker still holds token {token}.",
            detail={"child": job_id, "token": token, "requeued": requeued},
        )

    @action("late")
    async def late(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        if not state.get("lapsed"):
            return Outcome("No lease has lapsed yet: Claim a child, then Let the lease lapse.", "info")
        lapsed = json.loads(state["lapsed"])
        job_id, token = lapsed["id"], int(lapsed["token"])
        sent = await self.send(ctx, job_id, token, f"late result of {job_id}")
        if sent.answer.startswith("EMQSTALE"):
            why = "the child was claimed again, so the row's token moved on and the fence refused it"
        elif sent.answer == "1":
            why = ("the token still matches but the child is not in active, so the script retired the row "
                   "and skipped the fan-in")
        else:
            why = "the row is gone"
        return sent.outcome(f"The first worker's late completion of {job_id} with token {token}: the script "
                            f"answered {sent.answer}; {why}; :dependencies {sent.before} → {sent.after}")

    @action("redeliver")
    async def redeliver(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        if not state.get("last"):
            return Outcome("Nothing to redeliver yet: complete a child first.", "info")
        last = json.loads(state["last"])
        sent = await self.send(ctx, last["id"], last["token"], last["result"])
        answer = "gone (0): the child's row was already retired" if sent.answer.startswith("0") else sent.answer
        moved = "did not move" if sent.after == sent.before else f"moved from {sent.before} to {sent.after}"
        return sent.outcome(f"Redelivered the completion of {last['id']} with its old token {last['token']}: "
                            f"the script answered {answer}; dependencies {moved} (still {sent.after})", answer)
