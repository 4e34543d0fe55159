"""The fan-in counter: a parent held on three children, released at zero.

"Complete child" claims the next child and completes it through the real
`claim` and `complete` scripts; the fan-in inside `complete` decrements
`:dependencies` and, at zero, moves the parent into `pending`. "Redeliver last
completion" sends the last completion again with its old token, and the page
shows that the counter did not move.
"""

from __future__ import annotations

import json
from typing import Any

from server.emq import flows, jobs, keyspace, results
from server.emq.errors import EmqError
from server.widgets.snapshot import QueueView
from server.widgets import flow
from server.widgets.base import Context, Outcome, Widget, action

PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")


def flow_spec() -> dict[str, Any]:
    return {
        "parent": {"id": PARENT, "payload": "build the report"},
        "children": [{"id": c, "payload": f"part {i}"} for i, c in enumerate(CHILDREN, 1)],
    }


def parent_status(view: QueueView) -> dict[str, Any]:
    """The parent's state as Valkey holds it, and the counter beside it."""
    row = view.row(PARENT)
    deps_key = view.row(PARENT, ":dependencies")
    processed = view.row(PARENT, ":processed")
    state = row.value.get("state") if row else None
    return {
        "state": state,
        "dependencies": int(deps_key.value) if deps_key else None,
        "done": len(processed.value) if processed else 0,
        "in_pending": PARENT in view.members("pending"),
        "sets": view.sets_of(PARENT),
    }


def readout(status: dict[str, Any], total: int) -> str:
    deps = status["dependencies"]
    if status["state"] is None:
        return "No flow in this queue: press Reset to land it again."
    held = flow.fate(status["state"], status["sets"])
    return f"{status['done']} of {total} children complete → :dependencies = {deps}; {held}"


class FanIn(Widget):
    name = "fanin"
    title = "The fan-in counter"
    queue_parts = (("fanin",),)
    # `#fanin-step=N` and the static trace: every child completes, then the
    # last completion is delivered again and the counter does not move.
    tour = ("complete-child", "complete-child", "complete-child", "redeliver")
    labels = {"complete-child": "Complete child", "redeliver": "Redeliver last completion", "reset": "Reset"}

    def job_ids(self, queue: str) -> list[str]:
        return [PARENT, *CHILDREN]

    async def land(self, ctx: Context) -> None:
        await flows.add(ctx.conn, self.queues(ctx)[0], flow_spec())

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        view = views[0]
        status = parent_status(view)
        children = [c.as_json() for c in flow.read_flow(view, PARENT, [(view, c) for c in CHILDREN]).children]
        last = json.loads(state["last"]) if state.get("last") else None
        return {
            "readout": readout(status, len(CHILDREN)),
            "picture": {"parent": {"id": PARENT, **status}, "children": children, "last": last},
        }

    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        if await results.dependencies(ctx.conn, queue, PARENT) <= 0:
            return Outcome("Every child has completed already; the parent was released. Reset to start again.", "info")
        claimed = await jobs.claim(ctx.conn, queue)
        if claimed is None:
            return Outcome("No child is waiting in pending.", "info")
        job_id, token = claimed
        result = f"result of {job_id}"
        await jobs.complete(ctx.conn, queue, job_id, token, result)
        # One round trip (one slot): remember the completion for "Redeliver",
        # and read back the counter and the parent's state the fan-in left.
        async with ctx.conn.pipeline(transaction=False) as pipe:
            pipe.hset(self.state_key(ctx), "last", json.dumps({"id": job_id, "token": token, "result": result}))
            pipe.get(keyspace.dependencies_key(queue, PARENT))
            pipe.hget(keyspace.job_key(queue, PARENT), "state")
            _, left, state = await pipe.execute()
        left_n = int(left or 0)
        state_s = state.decode() if isinstance(state, bytes) else state
        tail = "the parent is released into pending" if state_s == "pending" else "the parent is still held"
        return Outcome(
            f"Completed {job_id} with token {token}: dependencies fell to {left_n}; {tail}.",
            detail={"child": job_id, "token": token, "dependencies": left_n, "parent_state": state_s},
        )

    @action("redeliver")
    async def redeliver(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        if not state.get("last"):
            return Outcome("Nothing to redeliver yet: complete a child first.", "info")
        last = json.loads(state["last"])
        queue = self.queues(ctx)[0]
        before = await results.dependencies(ctx.conn, queue, PARENT)
        try:
            await jobs.complete(ctx.conn, queue, last["id"], last["token"], last["result"])
            answer = "accepted"
        except jobs.Gone:
            answer = "gone (0): the child's row was already retired"
        except EmqError as exc:
            answer = str(exc)
        after = await results.dependencies(ctx.conn, queue, PARENT)
        b, a = before, after
        moved = "did not move" if a == b else f"moved from {b} to {a}"
        return Outcome(
            f"Redelivered the completion of {last['id']} with its old token {last['token']}: "
            f"the script answered {answer}; dependencies {moved} (still {a}).",
            "refused",
            {"child": last["id"], "answer": answer, "before": b, "after": a},
        )
