"""The failure policy: a child dies at its attempt cap, and its row's token decides.

Under `fp` the held parent is failed into `dead`; under `id` the error goes to `:ignored`
and the counter falls; a failure with attempts left schedules the child and reads no token.
The main flow lands `uniform` (every child on the learner's policy) or `mixed` (`fp`, both
flags so `id`, and an unknown token that resolves to `fp`); a cross-queue flow beside it
has its one child in `failure-policy.mail`.
"""

from __future__ import annotations

from typing import Any, Literal

from server.emq import flows, jobs, keyspace, pump
from server.emq.wire import as_text
from server.widgets import base, flow
from server.widgets import failure_policy_picture as picture
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.failure_policy_picture import CHILDREN, HOME, LINKED, MAIL, PARENT, REMOTE, WORDS, entry_words
from server.widgets.turn import Turn
from server.widgets.view import Moment

POLICIES = ("fp", "id")
VARIANTS = ("uniform", "mixed")
ERROR = "card declined"
UNKNOWN_TOKEN = "skip"  # what an old or foreign writer might leave in parent_policy


def choices(state: dict[str, str]) -> tuple[str, str]:
    policy, variant = state.get("policy", ""), state.get("variant", "")
    return (policy if policy in POLICIES else "fp", variant if variant in VARIANTS else "uniform")


def flag_for(policy: str) -> dict[str, bool]:
    return {"ignore_dependency_on_failure": True} if policy == "id" else {"fail_parent_on_failure": True}


def flow_spec(policy: str, variant: str) -> dict[str, Any]:
    """Every child on `policy`; mixed: every child on fp, the second naming both flags (so id), the
    third's row token then overwritten with UNKNOWN_TOKEN."""
    mixed = variant == "mixed"
    found = flow.spec(PARENT, "settle invoice 7", CHILDREN, "charge {i}", **flag_for("fp" if mixed else policy))
    if mixed:
        found["children"][1]["ignore_dependency_on_failure"] = True
    return found


RETRY_CAP = 3  # "attempts left": the first failure of three allowed
BATCH = 10


class PolicyBody(Body):
    policy: Literal["fp", "id"]  # the radio: the policy every child of the main flow lands with


class FailurePolicy(Widget):
    name = "failure-policy"
    title = "The failure policy"
    design = Design(  # DESIGN.md's row
        "failure policy", ("Fail child at the cap", "Reset"), containing=("attempts left",),
        choices=("fail the parent", "ignore the dependency"))
    queue_parts = (HOME, MAIL)
    kept_on_reset = ("policy", "variant")
    # the tour states its policy, so a reader without JavaScript sees each arm
    tour = (
        Step("fp-failed", "Under fp, a death at the cap failed the parent",
             (do("policy", policy="fp"), do("fail-child"))),
        Step("fp-stays", "A sibling still counted, yet the failed parent stayed in dead", (do("complete-child"),)),
        Step("id-ignored", "Under id, a death at the cap went to :ignored and the counter fell",
             (do("policy", policy="id"), do("fail-child"))),
        Step("id-released", "The last child released the parent despite a failure",
             (do("complete-child"), do("fail-child"))),
        Step("remote-entry", "A cross-queue death waited in its queue's outbox", (do("fail-remote"),)),
        Step("remote-applied", "The Pump applied the policy on the parent's slot", (do("pump"),)),
        Step("retry", "A failure with attempts left scheduled the child; the token was not read",
             (do("mixed"), do("fail-retry"))),
        Step("both-flags", "A child naming both flags took the ignore arm", (do("fail-child"),)),
        Step("unknown-token", "An unknown token took the fp arm", (do("fail-child"),)),
    )

    def job_ids(self, part: str) -> tuple[str, ...]:
        return (REMOTE,) if part == MAIL else (PARENT, *CHILDREN, LINKED)

    async def land(self, turn: Turn) -> None:
        await self.land_with(turn, *choices(turn.moment.state))

    async def land_with(self, turn: Turn, policy: str, variant: str) -> None:
        home = turn.queue(HOME)
        await flows.add(turn.conn, home, flow_spec(policy, variant))
        if variant == "mixed":
            # a token this library never writes, as an old or foreign writer might leave it
            await turn.conn.hset(keyspace.job_key(home, CHILDREN[2]), "parent_policy", UNKNOWN_TOKEN)
        await flows.add(turn.conn, home, {"parent": {"id": LINKED, "payload": "send the receipt"}, "children": [
            {"id": REMOTE, "payload": "mail the receipt", "queue": turn.queue(MAIL), **flag_for(policy)}]})

    def describe(self, moment: Moment) -> Description:
        return picture.describe(moment, *choices(moment.state))

    parent_fate = base.parent_reading("parent-fate", PARENT, HOME)
    dependencies = base.parent_reading("dependencies", PARENT, HOME)
    parent_claimable = base.parent_reading("parent-claimable", PARENT, HOME)

    @reading("child-pending")
    def child_pending(self, now: Moment, before: Moment) -> Value:
        return any(c in now.view(HOME).members("pending") for c in CHILDREN)

    @reading("next-child")
    def next_child(self, now: Moment, before: Moment) -> Value:
        """The child a press claims next (the head of pending), with its row's token: in a mixed
        flow each child dies under its own policy, so a question about "this child" names it."""
        view = now.view(HOME)
        head = next(iter(view.members("pending")), None)
        if head not in CHILDREN:
            return "the next child"
        return f"{head} (parent_policy {view.fields(head).get('parent_policy') or 'unset'})"

    @reading("parent-held-child-pending")
    def parent_held_child_pending(self, now: Moment, before: Moment) -> Value:
        return bool(self.child_pending(now, now)) and self.parent_fate(now, now) == "held"

    @reading("parent-failed-child-pending")
    def parent_failed_child_pending(self, now: Moment, before: Moment) -> Value:
        return bool(self.child_pending(now, now)) and self.parent_fate(now, now) == "failed"

    async def claim_child(self, turn: Turn) -> tuple[str, int, jobs.Lineage] | Outcome:
        view = turn.moment.view(HOME)
        pending = view.members("pending")
        if not pending or pending[0] not in CHILDREN:
            return info("No child of the main flow waits in pending: press Reset, or pick a policy, to land it again.")
        got = await turn.claim(HOME)
        if got is None or got[0] not in CHILDREN:
            return info(f"Claim took {got[0] if got else 'nothing'}, not a child of the flow: their rows are gone. "
                        "Press Reset.")
        return got

    @action("fail-child", "Fail child at the cap")
    async def fail_child(self, turn: Turn, body: Body) -> Outcome:
        if isinstance(claimed := await self.claim_child(turn), Outcome):
            return claimed
        job_id, token, line = claimed
        before = turn.moment
        said = before.view(HOME).fields(job_id).get("parent_policy")
        answer = await jobs.fail(turn.conn, turn.queue(HOME), job_id, token, ERROR, token, line=line)
        now = await turn.read()
        was, fate = self.parent_fate(before, before), self.parent_fate(now, now)
        reached: tuple[str, ...] = ()
        if line.policy == "id":
            effect = "the error went to the parent's :ignored and the counter fell"
            if job_id in now.view(HOME).fields(PARENT, ":ignored"):
                both = job_id == CHILDREN[1] and choices(before.state)[1] == "mixed"
                reached = ("id-ignored",) + (("both-flags",) if both else ())
            if fate == "released" and was == "held":
                effect += ", releasing the parent into pending"
                reached += ("id-released",)
        elif was == "held" and fate == "failed":
            effect = "the parent was failed and moved to dead"
            reached = ("fp-failed",) + (("unknown-token",) if said not in POLICIES else ())
        else:
            effect = f"the parent was already {was}, so it did not change"
        resolves = " resolves to fp" if said not in POLICIES else ""
        return Outcome(text=f"{job_id} died at its cap: fail answered {answer}. Its row's parent_policy "
                            f"{said or '(none)'}{resolves}: {effect}.", reached=reached,
                       detail={"child": job_id, "answer": answer, "policy": said or "", "arm": line.policy})

    @action("fail-retry", "Fail child with attempts left")
    async def fail_retry(self, turn: Turn, body: Body) -> Outcome:
        if isinstance(claimed := await self.claim_child(turn), Outcome):
            return claimed
        job_id, token, line = claimed
        before = _parent_keys(turn.moment)
        answer = await jobs.fail(turn.conn, turn.queue(HOME), job_id, token, ERROR, RETRY_CAP, line=line)
        now = await turn.read()
        if answer != "scheduled":
            return Outcome(text=f"{job_id} failed attempt {token} of {RETRY_CAP}: fail answered {answer}, the last "
                                "attempt, so its policy applied.", detail={"child": job_id, "answer": answer})
        return Outcome(text=f"{job_id} failed attempt {token} of {RETRY_CAP}: fail answered scheduled. Below the cap "
                            "no policy is applied: the parent's keys did not move.",
                       reached=("retry",) if _parent_keys(now) == before else (),
                       detail={"child": job_id, "answer": answer})

    @action("complete-child", "Complete child")
    async def complete_child(self, turn: Turn, body: Body) -> Outcome:
        if isinstance(claimed := await self.claim_child(turn), Outcome):
            return claimed
        job_id, token, line = claimed
        was = self.parent_fate(turn.moment, turn.moment)
        await jobs.complete(turn.conn, turn.queue(HOME), job_id, token, f"{job_id} charged", line=line,
                            tail=turn.after)
        fate = str(self.parent_fate(await turn.read(), turn.moment))
        reached: tuple[str, ...] = ()
        if was == "failed":
            effect, reached = "the counter fell, but the failed parent stays in dead", ("fp-stays",)
        elif was == "held" and fate == "released":
            effect, reached = "at zero the parent was released into pending", ("id-released",)
        else:
            effect = {"held": "the parent stays held", "released": "the parent is released"}.get(
                fate, f"the parent is {fate}")
        return Outcome(text=f"Completed {job_id}: complete answered 1 and counted it off the parent; {effect}.",
                       reached=reached, detail={"child": job_id})

    @action("policy", "Choose the policy", PolicyBody)
    async def set_policy(self, turn: Turn, body: PolicyBody) -> Outcome:
        await turn.clear()
        await self.land_with(turn, body.policy, "uniform")
        turn.remember(policy=body.policy, variant="uniform")
        return Outcome(text=f"Landed the flows again with every child on {body.policy} ({WORDS[body.policy]}).",
                       detail={"policy": body.policy})

    @action("mixed", "Land a mixed flow")
    async def mixed(self, turn: Turn, body: Body) -> Outcome:
        await turn.clear()
        await self.land_with(turn, choices(turn.moment.state)[0], "mixed")
        turn.remember(variant="mixed")
        return Outcome(text=f"Landed a mixed flow: {CHILDREN[0]} asks fp, {CHILDREN[1]} names both flags "
                            f"(its row says id), {CHILDREN[2]}'s row says {UNKNOWN_TOKEN}.",
                       detail={"variant": "mixed"})

    @action("fail-remote", "Fail the cross-queue child at the cap")
    async def fail_remote(self, turn: Turn, body: Body) -> Outcome:
        mail = turn.moment.view(MAIL)
        if REMOTE not in mail.members("pending"):
            return info(f"{REMOTE} does not wait in pending in {MAIL}: press Reset to land it again.")
        got = await turn.claim(MAIL)
        if got is None or got[0] != REMOTE:
            return info(f"Claim took {got[0] if got else 'nothing'} in {MAIL}, not {REMOTE}: press Reset.")
        _, token, line = got
        answer = await jobs.fail(turn.conn, mail.queue, REMOTE, token, ERROR, token, line=line)
        if line.mode != "xq":
            return Outcome(text=f"{REMOTE} died at its cap: fail answered {answer}.", detail={"answer": answer})
        return Outcome(text=f"{REMOTE} died at its cap in {MAIL}: its parent is on another slot, so fail "
                            f"appended a failed entry (policy {line.policy}) to mail's flow:outbox.",
                       reached=("remote-entry",), detail={"answer": answer, "policy": line.policy})

    @action("pump", "Deliver with the Pump")
    async def pump_tick(self, turn: Turn, body: Body) -> Outcome:
        mail = turn.moment.view(MAIL)
        delivered = await pump.deliver_flow_completions(turn.conn, mail.queue, BATCH,
                                                        accept=flow.trusted_by(turn.sandbox))
        if delivered:
            now = await turn.read()
            linked = flow.read_flow(now.view(HOME), LINKED, [(now.view(MAIL), REMOTE)])
            return Outcome(text=f"The Pump delivered {delivered} from mail's outbox on {LINKED}'s slot: "
                                f"{linked.parent.fate()}.", reached=("remote-applied",),
                           detail={"delivered": delivered})
        # the head whole, as the Pump read it (the picture's read cuts a long entry)
        if (head := await turn.conn.lindex(keyspace.outbox_key(mail.queue), 0)) is not None:
            said = entry_words(as_text(head), mail, whole=True)
            return Outcome(text=f"The Pump stopped at the head of mail's outbox, {said}; nothing was delivered.",
                           kind="refused", detail={"delivered": 0})
        hint = "fail the cross-queue child first" if REMOTE in mail.members("pending") else "nothing waits"
        return Outcome(text=f"mail's flow:outbox is empty: {hint}.", kind="info", detail={"delivered": 0})


def _parent_keys(moment: Moment) -> list[object]:
    """The main parent's row, counter and :ignored as Valkey holds them."""
    view = moment.view(HOME)
    return [None if (k := view.row(PARENT, sub)) is None else k.value for sub in ("", ":dependencies", ":ignored")]
