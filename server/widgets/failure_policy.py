"""The failure policy: one child dies at its attempt cap; the token decides.

A same-queue flow (a parent and three children) is landed by `flows.add` with
every child asking for the chosen policy, so each child row carries
`parent_policy` `fp` or `id`. "Fail child at the cap" claims the next child and
runs the real `fail` with `max_attempts=1`: the first failure is final, and
that is the one moment the script reads the token. Under `fp` the held parent
gets `state failed` and enters `dead`; under `id` the error goes to the
parent's `:ignored` hash and the counter falls as if the child had completed.
"Complete child" finishes the rest, to show that under `fp` nothing releases
the parent afterwards. Changing the radio lands the flow again with the other
policy; the choice is kept in the lab hash, the token shown is read from rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from server.emq import flows, jobs, keyspace
from server.emq.wire import text
from server.widgets.snapshot import QueueView
from server.widgets import flow
from server.widgets.base import (
    BadInput,
    Context,
    Outcome,
    Widget,
    action,
    choice,
)

PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")
POLICIES = ("fp", "id")
WORDS = {"fp": "fail the parent", "id": "ignore the dependency"}
ERROR = "card declined"
# What `#failure-policy-step=N` replays (under the policy the learner chose)
# and the static trace records: one death, then the rest complete.
TOUR = ("fail-child", "complete-child", "complete-child")


def flow_spec(policy: str) -> dict[str, Any]:
    flag = "ignore_dependency_on_failure" if policy == "id" else "fail_parent_on_failure"
    return {
        "parent": {"id": PARENT, "payload": "settle invoice 7"},
        "children": [{"id": c, "payload": f"charge {i}", flag: True} for i, c in enumerate(CHILDREN, 1)],
    }


@dataclass(frozen=True)
class ParentNow:
    """The parent read back after an action, for the outcome sentence."""

    dependencies: int
    state: str
    ignored: int
    sets: list[str]
    token: str  # the asked-for child's parent_policy ("" when none was asked)


class FailurePolicy(Widget):
    name = "failure-policy"
    title = "The failure policy"
    queue_parts = (("failure-policy",),)
    tour = TOUR
    kept_on_reset = ("policy",)  # Reset re-lands the flow under the policy the learner picked
    # Without JavaScript the learner cannot pick: the recorded run shows both arms.
    trace_tour = (("policy", {"policy": "fp"}), *TOUR, ("policy", {"policy": "id"}), *TOUR)
    labels = {"fail-child": "Fail child at the cap", "complete-child": "Complete child", "reset": "Reset",
              "policy": "Choose the policy"}

    def job_ids(self, queue: str) -> list[str]:
        return [PARENT, *CHILDREN]

    async def chosen(self, ctx: Context) -> str:
        policy = (await self.state(ctx)).get("policy")
        return policy if policy in POLICIES else "fp"

    async def land(self, ctx: Context) -> None:
        await flows.add(ctx.conn, self.queues(ctx)[0], flow_spec(await self.chosen(ctx)))

    # -- the picture ---------------------------------------------------------
    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        view = views[0]
        row = view.row(PARENT)
        deps = view.row(PARENT, ":dependencies")
        processed = view.row(PARENT, ":processed")
        ignored = view.row(PARENT, ":ignored")
        done = dict(processed.value) if processed else {}
        parent = {
            "id": PARENT,
            "state": row.value.get("state") if row else None,
            "dependencies": int(deps.value) if deps else None,
            "sets": view.sets_of(PARENT),
            "failed_child": row.value.get("failed_child") if row else None,
            "ignored": dict(ignored.value) if ignored else {},
            "processed": done,
        }
        reading = flow.read_flow(view, PARENT, [(view, c) for c in CHILDREN])
        children: list[dict[str, Any]] = []
        for cid in CHILDREN:
            crow = view.row(cid)
            fields = crow.value if crow is not None else {}
            children.append({**reading.children[len(children)].as_json(),
                             "policy": fields.get("parent_policy"), "error": fields.get("last_error")})
        tokens = sorted({c["policy"] for c in children if c["policy"]})
        policy = state.get("policy") if state.get("policy") in POLICIES else "fp"
        return {
            "readout": self.readout(parent, children, tokens),
            "picture": {"policy": policy, "tokens": tokens, "parent": parent, "children": children},
        }

    @staticmethod
    def readout(parent: dict[str, Any], children: list[dict[str, Any]], tokens: list[str]) -> str:
        if not tokens:
            said = "No child row is left to read a token from"
        else:
            said = "The child rows say parent_policy " + " and ".join(f"{t} ({WORDS.get(t, 'unknown')})" for t in tokens)
        dead = sum(c["state"] == "dead" for c in children)
        done = sum(c["counted"] == "processed" for c in children)
        waiting = sum(c["state"] == "pending" for c in children)
        ignored = len(parent["ignored"])
        return (
            f"{said}. {dead} died at the cap, {done} completed, {waiting} waiting → "
            f":dependencies = {parent['dependencies']}, :ignored holds {ignored}; "
            f"{flow.fate(parent['state'], parent['sets'])}"
        )

    # -- actions -------------------------------------------------------------
    async def next_child(self, ctx: Context) -> tuple[str, int] | None:
        """Claim the next pending child; never the parent once it is released."""
        queue = self.queues(ctx)[0]
        pending = await ctx.conn.zrange(keyspace.queue_key(queue, "pending"), 0, 0)
        first = pending[0].decode() if pending and isinstance(pending[0], bytes) else (pending[0] if pending else None)
        if first not in CHILDREN:
            return None
        return await jobs.claim(ctx.conn, queue)

    async def parent_now(self, ctx: Context, child: str | None = None) -> ParentNow:
        """The parent as Valkey holds it now, in one round trip (one slot); with
        `child`, that child's parent_policy token too."""
        queue = self.queues(ctx)[0]
        async with ctx.conn.pipeline(transaction=False) as pipe:
            pipe.get(keyspace.dependencies_key(queue, PARENT))
            pipe.hget(keyspace.job_key(queue, PARENT), "state")
            pipe.hlen(keyspace.ignored_key(queue, PARENT))
            for name in keyspace.STATE_SETS:
                pipe.zscore(keyspace.queue_key(queue, name), PARENT)
            if child is not None:
                pipe.hget(keyspace.job_key(queue, child), "parent_policy")
            deps, state, ignored, *rest = [text(r) for r in await pipe.execute()]
        scores = rest[: len(keyspace.STATE_SETS)]
        return ParentNow(
            dependencies=int(deps or 0),
            state=state or "gone",
            ignored=int(ignored or 0),
            sets=[name for name, score in zip(keyspace.STATE_SETS, scores) if score is not None],
            token=str(rest[-1]) if child is not None else "",
        )

    @action("fail-child")
    async def fail_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        claimed = await self.next_child(ctx)
        if claimed is None:
            return Outcome("No child is waiting in pending. Reset to land the flow again.", "info")
        job_id, token = claimed
        before = await self.parent_now(ctx, job_id)
        token_s = before.token
        outcome = await jobs.fail(ctx.conn, queue, job_id, token, ERROR, max_attempts=1)
        now = await self.parent_now(ctx)
        if jobs.policy_arm(token_s) == "id":
            effect = (f"its error went to the parent's :ignored ({now.ignored} recorded) and :dependencies fell "
                      f"from {before.dependencies} to {now.dependencies}")
        else:
            effect = f"the parent was failed and :dependencies stayed at {now.dependencies}"
        return Outcome(
            f"{job_id} failed on attempt 1 of 1 and is {outcome}. Its row says parent_policy {token_s} "
            f"({WORDS.get(jobs.policy_arm(token_s))}), so {effect}; {flow.fate(now.state, now.sets)}.",
            detail={"child": job_id, "outcome": outcome, "policy": token_s, "dependencies": now.dependencies,
                    "parent_state": now.state, "ignored": now.ignored},
        )

    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        claimed = await self.next_child(ctx)
        if claimed is None:
            return Outcome("No child is waiting in pending. Reset to land the flow again.", "info")
        job_id, token = claimed
        await jobs.complete(ctx.conn, queue, job_id, token, f"{job_id} charged")
        now = await self.parent_now(ctx)
        return Outcome(
            f"Completed {job_id}: :dependencies = {now.dependencies}; {flow.fate(now.state, now.sets)}.",
            detail={"child": job_id, "dependencies": now.dependencies, "parent_state": now.state},
        )

    @action("policy")
    async def set_policy(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        if "policy" not in body:
            raise BadInput("'policy' is required: one of fp, id")
        policy = choice(body, "policy", POLICIES, "fp")
        await self.remember(ctx, policy=policy)
        await self.reset(ctx)
        return Outcome(f"Landed the flow again with every child on {policy} ({WORDS[policy]}).",
                       detail={"policy": policy})
