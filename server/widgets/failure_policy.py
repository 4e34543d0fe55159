"""The failure policy: a child dies at its attempt cap; the token decides.

`flows.add` lands a same-queue flow (a parent and three children) with each
child's `parent_policy`, and a cross-queue flow beside it (flows in
`failure_flows.py`). "Fail child at the cap" claims the next child and runs
the real `fail` with `max_attempts=1`: the first failure is final, and that is
the one moment the script reads the token. Under `fp` the held parent gets
`state failed` and enters `dead`; under `id` the error goes to the parent's
`:ignored` hash and the counter falls as if the child had completed. "Fail
child with attempts left" runs `fail` with attempts to spare: the child is
scheduled and the token is not read. The mixed flow gives each child its own
token (one naming both flags resolves to `id`, an unknown one to `fp`). The
cross-queue child's death is an outbox entry until the Pump delivers it on
the parent's slot. The radio's policy and the variant are the learner's
choices, kept across Reset.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from server.emq import flows, jobs, keyspace, pump
from server.emq.wire import text
from server.widgets import flow
from server.widgets.base import BadInput, Context, Outcome, Widget, action, choice, tour_step_of
from server.widgets.failure_flows import (
    CHILDREN,
    ERROR,
    LINKED,
    PARENT,
    POLICIES,
    REMOTE,
    UNKNOWN_TOKEN,
    VARIANTS,
    WORDS,
    child_picture,
    flow_spec,
    linked_picture,
    linked_spec,
    parent_picture,
    readout,
)
from server.widgets.snapshot import QueueView

RETRY_CAP = 3  # "attempts left": the first failure of three allowed
# What `#failure-policy-step=N` replays (under the policy the learner chose):
# one death and the rest completing, the cross-queue death through the Pump,
# then the mixed flow: a retry, both flags, an unknown token.
TOUR = ("fail-child", "complete-child", "complete-child", "fail-remote", "pump",
        "mixed", "fail-retry", "fail-child", "fail-child")
UNIFORM = TOUR[:5]


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
    queue_parts = (("failure-policy",), ("failure-policy", "mail"))
    tour = TOUR
    kept_on_reset = ("policy", "variant")  # Reset re-lands what the learner picked
    # Without JavaScript the learner cannot pick: the recorded run shows both arms, then the mixed flow.
    trace_tour = (("policy", {"policy": "fp"}), *UNIFORM, ("policy", {"policy": "id"}), *UNIFORM, *TOUR[5:])
    labels: ClassVar[dict[str, str]] = {"fail-child": "Fail child at the cap", "complete-child": "Complete child",
              "fail-retry": "Fail child with attempts left", "mixed": "Land a mixed flow",
              "fail-remote": "Fail the cross-queue child at the cap", "pump": "Deliver with the Pump",
              "reset": "Reset", "policy": "Choose the policy"}

    def job_ids(self, queue: str) -> list[str]:
        return [REMOTE] if queue.endswith(".mail") else [PARENT, *CHILDREN, LINKED]

    async def choices(self, ctx: Context) -> tuple[str, str]:
        state = await self.state(ctx)
        policy, variant = state.get("policy"), state.get("variant")
        return (policy if policy in POLICIES else "fp", variant if variant in VARIANTS else "uniform")

    async def land(self, ctx: Context) -> None:
        home, mail = self.queues(ctx)
        policy, variant = await self.choices(ctx)
        await flows.add(ctx.conn, home, flow_spec(policy, variant))
        if variant == "mixed":
            # a token this library never writes, as an old or foreign writer might
            await ctx.conn.hset(keyspace.job_key(home, CHILDREN[2]), "parent_policy", UNKNOWN_TOKEN)
        await flows.add(ctx.conn, home, linked_spec(policy, mail))

    # -- the picture ---------------------------------------------------------
    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        home, mail = views
        parent = parent_picture(home, PARENT)
        children = [child_picture(home, home, cid, PARENT) for cid in CHILDREN]
        tokens = sorted({c["policy"] for c in children if c["policy"]})
        linked = linked_picture(home, mail)
        policy = state.get("policy") if state.get("policy") in POLICIES else "fp"
        variant = state.get("variant") if state.get("variant") in VARIANTS else "uniform"
        return {
            "readout": readout(parent, children, tokens, linked),
            "picture": {"policy": policy, "variant": variant, "tokens": tokens, "parent": parent,
                        "children": children, "linked": linked},
        }

    # -- reading -------------------------------------------------------------
    async def next_child(self, ctx: Context, start: QueueView | None) -> tuple[str, int] | None:
        """Claim the next pending child; never the parent once it is released.
        `start`: the queue as the action's lock read it (None: read the head now)."""
        queue = self.queues(ctx)[0]
        if start is not None:
            head = next(iter(start.members("pending")), None)
        else:
            pending = await ctx.conn.zrange(keyspace.queue_key(queue, "pending"), 0, 0)
            head = text(pending[0]) if pending else None
        if head not in CHILDREN:
            return None
        return await jobs.claim(ctx.conn, queue)

    async def fail_next(self, ctx: Context, cap: int | None) -> tuple[str, int, str, ParentNow, ParentNow] | Outcome:
        """Claim the next child and fail it with `cap` attempts (None: this
        attempt is the cap): its id, token, the script's outcome, and the
        parent before (as the lock read it, with the child's policy token) and now."""
        start = ctx.take_start()
        claimed = await self.next_child(ctx, start)
        if claimed is None:
            return Outcome("No child is waiting in pending. Reset to land the flow again.", "info")
        job_id, token = claimed
        before = await self.parent_before(ctx, start, job_id if cap is None else None)
        outcome = await jobs.fail(ctx.conn, self.queues(ctx)[0], job_id, token, ERROR,
                                  max_attempts=token if cap is None else cap)
        return job_id, token, outcome, before, await self.parent_now(ctx)

    async def parent_before(self, ctx: Context, start: QueueView | None, child: str | None = None) -> ParentNow:
        """The parent as the action's lock read it (claiming a child does not
        touch it), or as Valkey holds it now when the lock read nothing."""
        if start is None:
            return await self.parent_now(ctx, child)
        deps, row, ignored = (start.row(PARENT, sub) for sub in (":dependencies", "", ":ignored"))
        child_row = start.row(child) if child is not None else None
        return ParentNow(
            dependencies=int(deps.value) if deps else 0,
            state=row.value.get("state", "gone") if row else "gone",
            ignored=len(ignored.value) if ignored else 0,
            sets=start.sets_of(PARENT),
            token=child_row.value.get("parent_policy", "") if child_row else "",
        )

    async def parent_now(self, ctx: Context, child: str | None = None, parent: str = PARENT) -> ParentNow:
        """A parent as Valkey holds it now, in one round trip (one slot); with
        `child`, that child's parent_policy token too."""
        queue = self.queues(ctx)[0]
        async with ctx.conn.pipeline(transaction=False) as pipe:
            pipe.get(keyspace.dependencies_key(queue, parent))
            pipe.hget(keyspace.job_key(queue, parent), "state")
            pipe.hlen(keyspace.ignored_key(queue, parent))
            for name in keyspace.STATE_SETS:
                pipe.zscore(keyspace.queue_key(queue, name), parent)
            if child is not None:
                pipe.hget(keyspace.job_key(queue, child), "parent_policy")
            deps, state, ignored, *rest = [text(r) for r in await pipe.execute()]
        scores = rest[: len(keyspace.STATE_SETS)]
        return ParentNow(
            dependencies=int(deps or 0),
            state=state or "gone",
            ignored=int(ignored or 0),
            sets=[name for name, score in zip(keyspace.STATE_SETS, scores) if score is not None],
            token=str(rest[-1] or "") if child is not None else "",
        )

    @staticmethod
    def arm_effect(token: str, before: ParentNow, now: ParentNow) -> str:
        if jobs.policy_arm(token) == "id":
            return (f"its error went to the parent's :ignored ({now.ignored} recorded) and :dependencies fell "
                    f"from {before.dependencies} to {now.dependencies}")
        if before.state != "awaiting_children":
            return f"the parent was not held any more ({before.state}), so nothing changed for it"
        return f"the parent was failed and :dependencies stayed at {now.dependencies}"

    @staticmethod
    def token_words(token: str) -> str:
        arm = jobs.policy_arm(token)
        said = WORDS[arm] if token == arm else f"not a token the script knows: it resolves to {arm}, {WORDS[arm]}"
        return f"parent_policy {token or '(none)'} ({said})"

    # -- actions -------------------------------------------------------------
    @action("fail-child")
    async def fail_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        failed = await self.fail_next(ctx, cap=None)
        if isinstance(failed, Outcome):
            return failed
        job_id, token, outcome, before, now = failed
        return Outcome(
            f"{job_id} failed on attempt {token} of {token} and is {outcome}. Its row says "
            f"{self.token_words(before.token)}, so {self.arm_effect(before.token, before, now)}; "
            f"{flow.fate(now.state, now.sets)}.",
            detail={"child": job_id, "outcome": outcome, "policy": before.token, "dependencies": now.dependencies,
                    "parent_state": now.state, "ignored": now.ignored},
        )

    @action("fail-retry")
    async def fail_retry(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        failed = await self.fail_next(ctx, cap=RETRY_CAP)
        if isinstance(failed, Outcome):
            return failed
        job_id, token, outcome, before, now = failed
        same = "unchanged" if before == now else "changed (unexpected)"
        return Outcome(
            f"{job_id} failed on attempt {token} of {RETRY_CAP} and is {outcome}: it waits in schedule for a "
            f"retry. Below the cap the script does not read the policy token; the parent is {same}: "
            f":dependencies = {now.dependencies}, {flow.fate(now.state, now.sets)}.",
            detail={"child": job_id, "outcome": outcome, "dependencies": now.dependencies, "parent_state": now.state},
        )

    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        claimed = await self.next_child(ctx, ctx.take_start())
        if claimed is None:
            return Outcome("No child is waiting in pending. Reset to land the flow again.", "info")
        job_id, token = claimed
        await jobs.complete(ctx.conn, queue, job_id, token, f"{job_id} charged")
        now = await self.parent_now(ctx)
        return Outcome(
            f"Completed {job_id}: :dependencies = {now.dependencies}; {flow.fate(now.state, now.sets)}.",
            detail={"child": job_id, "dependencies": now.dependencies, "parent_state": now.state},
        )

    @action("fail-remote")
    async def fail_remote(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        mail = self.queues(ctx)[1]
        claimed = await jobs.claim(ctx.conn, mail)
        if claimed is None:
            return Outcome(f"{REMOTE} is not waiting in failure-policy.mail. Reset to land it again.", "info")
        job_id, token = claimed
        policy = text(await ctx.conn.hget(keyspace.job_key(mail, job_id), "parent_policy")) or ""
        outcome = await jobs.fail(ctx.conn, mail, job_id, token, ERROR, max_attempts=token)
        waiting = await ctx.conn.llen(keyspace.outbox_key(mail))
        now = await self.parent_now(ctx, parent=LINKED)
        return Outcome(
            f"{job_id} failed at the cap in failure-policy.mail and is {outcome}. Its parent {LINKED} lives on "
            f"another slot, so the script appended a failure entry (policy {jobs.policy_arm(policy)}) to mail's "
            f"outbox, which now holds {waiting}; {LINKED} is untouched until the Pump runs: "
            f"{flow.fate(now.state, now.sets)}.",
            detail={"child": job_id, "outcome": outcome, "outbox": waiting, "parent_state": now.state},
        )

    @action("pump")
    async def pump_tick(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        mail = self.queues(ctx)[1]
        before = await self.parent_now(ctx, parent=LINKED)
        delivered = await pump.deliver_flow_completions(ctx.conn, mail, 10)
        now = await self.parent_now(ctx, parent=LINKED)
        if not delivered:
            return Outcome(f"The Pump found nothing to deliver in mail's outbox; {LINKED}: "
                           f"{flow.fate(now.state, now.sets)}.", "info", {"delivered": 0})
        if now.state == "failed":
            effect = f"applied fp on {LINKED}'s slot: it is failed and in dead"
        else:
            effect = (f"applied id on {LINKED}'s slot: the error is in :ignored and :dependencies fell from "
                      f"{before.dependencies} to {now.dependencies}")
        return Outcome(
            f"The Pump delivered {delivered} entr{'y' if delivered == 1 else 'ies'} from mail's outbox and "
            f"{effect}; {flow.fate(now.state, now.sets)}.",
            detail={"delivered": delivered, "parent_state": now.state, "dependencies": now.dependencies},
        )

    @action("mixed")
    async def mixed(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        await self.remember(ctx, variant="mixed")
        await self.reset(ctx)
        return Outcome(
            f"Landed a mixed flow: {CHILDREN[0]} asks for fp, {CHILDREN[1]} names both flags (its row says id), "
            f"{CHILDREN[2]}'s row carries the unknown token {UNKNOWN_TOKEN!r}.", detail={"variant": "mixed"})

    @action("policy")
    async def set_policy(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        if "policy" not in body:
            raise BadInput("'policy' is required: one of fp, id")
        policy = choice(body, "policy", POLICIES, "fp")
        await self.remember(ctx, policy=policy, variant="uniform")
        await self.reset(ctx)
        return Outcome(f"Landed the flow again with every child on {policy} ({WORDS[policy]}).",
                       detail={"policy": policy})

    @action("goto")
    async def goto(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """The tour starts from the uniform flow under the learner's policy."""
        step, note = tour_step_of(body, len(self.tour))
        await self.remember(ctx, variant="uniform")
        outcome = await self.replay(ctx, step)
        return dataclasses.replace(outcome, text=note + outcome.text)
