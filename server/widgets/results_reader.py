"""The results reader: three pure reads of what the fan-in wrote on a parent.

A same-queue flow (a parent and three children) whose children carry the
ignore policy: "Complete child" and "Fail child at the cap" run the real
`claim`, `complete` and `fail` scripts, so the fan-in fills `:processed`,
`:ignored` and `:dependencies`. "Read the results" calls the three reads of
`server.emq.results` and proves they wrote nothing: it takes a fingerprint
(DUMP of every key of the queue) before and after the reads and compares.
The answers are kept in the lab hash, outside the queue's keys, so the
picture can show the last read next to the keys it came from.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from server.emq import jobs, results
from server.widgets import flow
from server.widgets.base import Context, Outcome, action
from server.widgets.flow import plural
from server.widgets.one_flow import OneFlow
from server.widgets.snapshot import QueueView

PARENT = "JOBquote"
CHILDREN = ("JOBleg1", "JOBleg2", "JOBleg3")
# What each child completes with: the value the fan-in records in :processed.
VALUES = {"JOBleg1": "subtotal 40.00", "JOBleg2": "tax 8.00", "JOBleg3": "shipping 5.00"}
ERROR = "carrier API timed out"


def flow_spec() -> dict[str, Any]:
    return {
        "parent": {"id": PARENT, "payload": "price the quote"},
        "children": [
            # ignore the dependency: a child dead at the cap lands in :ignored
            # and the parent still proceeds
            {"id": c, "payload": f"leg {i}", "ignore_dependency_on_failure": True}
            for i, c in enumerate(CHILDREN, 1)
        ],
    }


def fingerprint(views: list[QueueView]) -> tuple[int, str]:
    """(key count, digest of every key's name, type and whole value) of the
    queues as `queue_keys` read them: two equal digests mean no key of these
    queues was created, removed or changed in between."""
    found = sorted((k.name, k.type, k.value) for view in views for k in view.keys)
    return len(found), hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()


def _entries(found: dict[str, str]) -> str:
    """A read's answer in words: the entries themselves, as the read returned them."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in found.items()) + "}" if found else "{} (empty)"


def counted(view: QueueView) -> dict[str, Any]:
    """What Valkey holds on the parent right now: the three keys the reads read."""
    processed = view.row(PARENT, ":processed")
    ignored = view.row(PARENT, ":ignored")
    deps = view.row(PARENT, ":dependencies")
    row = view.row(PARENT)
    return {
        "values": processed.value if processed else {},
        "ignored": ignored.value if ignored else {},
        "dependencies": int(deps.value) if deps else 0,
        "state": row.value.get("state") if row else None,
        "sets": view.sets_of(PARENT),
    }



def lineage_of(queue: str, start: QueueView | None, job_id: str | None) -> jobs.Lineage | None:
    """A child's lineage from the row the lock read (None: none read; `complete` reads it)."""
    row = start.row(job_id) if start is not None and job_id else None
    return jobs.lineage_of_row(queue, row.value if row else None)

class ResultsReader(OneFlow):
    name = "results"
    title = "The results reader"
    queue_parts = (("results",),)
    # `#results-step=N` and the static trace: two values, one ignored
    # failure, then the three reads of what the fan-in wrote.
    tour = ("complete-child", "complete-child", "fail-child", "read")
    labels: ClassVar[dict[str, str]] = {"complete-child": "Complete child", "fail-child": "Fail child at the cap",
              "read": "Read the results", "reset": "Reset"}

    parent, children = PARENT, CHILDREN

    def flow_spec(self) -> dict[str, Any]:
        return flow_spec()

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        view = views[0]
        now = counted(view)
        done, ignored = len(now["values"]), len(now["ignored"])
        if now["state"] is None:
            readout = "No flow in this queue: press Reset to land it again."
        else:
            held = flow.fate(now["state"], now["sets"])
            readout = (
                f"{done} completed, {ignored} ignored of {len(CHILDREN)} children → "
                f":dependencies = {now['dependencies']}; {held}"
            )
        last = json.loads(state["read"]) if state.get("read") else None
        if last is not None:
            # the reads describe the moment they ran; say whether Valkey has moved on
            same = (last["values"], last["dependencies"], last["ignored"]) == (
                now["values"], now["dependencies"], now["ignored"])
            last["current"] = same
        return {
            "readout": readout,
            "picture": {
                "parent": {"id": PARENT, **now},
                "children": [c.as_json() for c in flow.read_flow(view, PARENT, [(view, c) for c in CHILDREN]).children],
                "read": last,
            },
        }

    async def _next_child(self, ctx: Context, failing: bool
                          ) -> tuple[str, int, int, jobs.Lineage | None, bool] | Outcome:
        """Claim the next child (its id, token, the counter before, the
        child's lineage as the lock read them, and whether it is completed
        already), or say why there is none. To complete, claim and complete
        go in one round trip (`jobs.claim_and_complete`: the lock's read names
        the child claim takes and its token)."""
        queue = self.queues(ctx)[0]
        start = ctx.take_start()
        deps = counted(start)["dependencies"] if start else await results.dependencies(ctx.conn, queue, PARENT)
        if deps <= 0:
            return Outcome("Every child has been counted; the parent was released. Reset to start again.", "info")
        head = next(iter(start.members("pending")), None) if start else None
        guess = lineage_of(queue, start, head) if head in CHILDREN else None
        done = False
        if guess is not None and not failing:
            assert start is not None and head is not None
            token = int((row.value.get("attempts") if (row := start.row(head)) else None) or 0) + 1
            claimed, done = await jobs.claim_and_complete(ctx.conn, queue, (head, token), VALUES.get(head, head),
                                                          line=guess, tail=ctx.tail)
        else:
            claimed = await jobs.claim(ctx.conn, queue)
        if claimed is None:
            return Outcome("No child is waiting in pending.", "info")
        return (*claimed, deps, lineage_of(queue, start, claimed[0]), done)

    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        return await self._signal(ctx, failing=False)

    @action("fail-child")
    async def fail_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        return await self._signal(ctx, failing=True)

    async def _signal(self, ctx: Context, failing: bool) -> Outcome:
        """Claim the next child and complete it with its value, or fail it at
        the cap (its policy sends the error to :ignored); the clause after it
        reads the counter and the parent when the outcome is recorded."""
        claimed = await self._next_child(ctx, failing)
        if isinstance(claimed, Outcome):
            return claimed
        job_id, token, before, line, done = claimed
        queue = self.queues(ctx)[0]
        clause, reads = flow.after_signal(queue, PARENT, before)
        if failing:
            # max_attempts=1: this first failure is already at the cap
            outcome = await jobs.fail(ctx.conn, queue, job_id, token, ERROR, max_attempts=1, line=line)
            return Outcome(f"Failed {job_id} at the cap ({outcome}): its policy is ignore the dependency, so the "
                           f"error went to :ignored; {clause}.", detail={"child": job_id, "outcome": outcome},
                           reads=reads)
        value = VALUES.get(job_id, job_id)
        if not done:
            await jobs.complete(ctx.conn, queue, job_id, token, value, line=line, tail=ctx.tail)
        return Outcome(f"Completed {job_id} with {value!r}: the fan-in recorded it in :processed; {clause}.",
                       detail={"child": job_id, "result": value}, reads=reads)

    @action("read")
    async def read(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        start = ctx.take_start()
        before = fingerprint([start] if start else await self.views(ctx))
        values = await results.children_values(ctx.conn, queue, PARENT)
        deps = await results.dependencies(ctx.conn, queue, PARENT)
        ignored = await results.ignored_failures(ctx.conn, queue, PARENT)
        after = fingerprint(await self.views(ctx))
        unchanged = before == after
        answers = {"values": values, "dependencies": deps, "ignored": ignored,
                   "keys": after[0], "unchanged": unchanged}
        # kept in the lab hash (lab:{…}:state), not among the queue's keys
        await self.remember(ctx, read=answers)
        proof = (
            f"the three reads wrote nothing: {plural(after[0], 'key')} unchanged"
            if unchanged
            else f"the queue's keys changed during the reads ({before[0]} → {after[0]} keys)"
        )
        return Outcome(
            f"The reads answered: children_values → {_entries(values)}; dependencies → {deps}; "
            f"ignored_failures → {_entries(ignored)}; {proof}.",
            "ok" if unchanged else "refused",
            answers,
        )
