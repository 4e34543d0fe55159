"""The fan-in counter: a parent held on three children, released at zero.

"Claim" and "Complete child" are a worker's two steps; the guards inside
`complete` answer for real: a stale token, a lapsed lease and the first
worker's late completion, a redelivered completion.
"""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec

from server.emq import flows, jobs, keyspace
from server.emq.errors import EmqError, Gone
from server.emq.script import raise_first
from server.emq.wire import text
from server.widgets import base, flow
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.reader import pipelined
from server.widgets.turn import Turn
from server.widgets.view import Kept, Moment

PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")
LEASE_MS = 30_000


class ChildBody(Body):
    child: str | None = None  # the claimed child the learner picked (the oldest claim when absent)


def result_of(job_id: str) -> str:
    return f"result of {job_id}"


class Claim(msgspec.Struct, kw_only=True):
    id: str
    token: str | None
    deadline: str


class Child(flow.ChildCard, kw_only=True):
    token: str | None  # its row's attempts
    deadline: str | None  # its lease's, while claimed


class Picture(msgspec.Struct, kw_only=True):
    parent: flow.ParentCard
    children: list[Child]
    active: list[Claim]
    last: Kept | None  # the last completion sent: what Redeliver sends again
    lapsed: Kept | None  # the lease that lapsed: what the late completion sends


class FanIn(Widget):
    name = "fanin"
    title = "The fan-in counter"
    design = Design(  # DESIGN.md's row
        "fan-in", ("Claim", "Complete child", "Redeliver last completion", "Reset"), containing=("stale",))
    queue_parts = ("fanin",)
    rows = (PARENT, *CHILDREN)
    tour = (
        Step("counted", "A completion counted down :dependencies", (do("complete-child"),)),
        Step("redelivered", "A redelivered completion changed nothing", (do("redeliver"),)),
        Step("claimed", "A child claimed with a token", (do("claim"),)),
        Step("stale", "A stale token refused with EMQSTALE", (do("stale"),)),
        Step("lapsed", "A lapsed lease put the child back in pending", (do("lapse"),)),
        Step("fenced", "A late completion refused by the token fence", (do("claim"), do("late"))),
        Step("released", "The last completion released the parent", (do("complete-child"), do("complete-child"))),
        Step("skipped", "A late completion retired a row the fan-in never counted",
             (do("reset"), do("claim"), do("lapse"), do("late"))),
    )

    async def land(self, turn: Turn) -> None:
        await flows.add(turn.conn, turn.queue(), flow.spec(PARENT, "build the report", CHILDREN, "part {i}"))

    def describe(self, moment: Moment) -> Description:
        view = moment.first
        reading_ = flow.read_flow(view, PARENT, [(view, c) for c in CHILDREN])
        # the jobs in `active`, oldest lease first
        active = [Claim(id=member, token=view.fields(member).get("attempts"),
                        deadline=datetime.fromtimestamp(float(score) / 1000, UTC).strftime("%H:%M:%S UTC"))
                  for member, score in view.scores("active").items()]
        deadlines = {a.id: a.deadline for a in active}
        children = [flow.card(Child, child, token=view.fields(child.id).get("attempts"),
                              deadline=deadlines.get(child.id)) for child in reading_.children]
        parent = reading_.parent
        waiting = [c for c in CHILDREN if c in view.members("pending") or c in view.members("active")]
        if parent.state is not None:
            readout = f"{reading_.tally()} → {reading_.counter()}; {parent.fate()}"
            readout += ("; in active: " + ", ".join(f"{a.id} (token {a.token})" for a in active)) if active else ""
        elif not waiting and parent.dependencies is None:
            readout = "No flow in this queue: press Reset to land it again."
        else:
            readout = (f"The parent's row is gone, yet {flow.plural(len(waiting), 'child', 'children')} still "
                       f"{'waits' if len(waiting) == 1 else 'wait'} and {reading_.counter()}: completions count down "
                       "a counter nothing will release. Press Reset.")
        return Description(readout, Picture(
            parent=parent, children=children, active=active,
            last=moment.kept("last"), lapsed=moment.kept("lapsed")))

    dependencies = base.parent_reading("dependencies", PARENT)
    children_outstanding = base.parent_reading("children-outstanding", PARENT)
    parent_fate = base.parent_reading("parent-fate", PARENT)

    @reading("child-to-complete")
    def child_to_complete(self, now: Moment, before: Moment) -> Value:
        """The parent waits and a child is there for Complete child to take (claimed, or in
        pending): with none left, the press changes nothing and asks nothing."""
        view = now.first
        there = any(c in view.members("active") or c in view.members("pending") for c in CHILDREN)
        return bool(self.children_outstanding(now, before)) and there

    @reading("child-claimed")
    def child_claimed(self, now: Moment, before: Moment) -> Value:
        """The parent waits and a child is in active: a stale completion has a claim to be refused on."""
        return bool(self.children_outstanding(now, before)) and bool(now.first.members("active"))

    @reading("completion-to-redeliver")
    def completion_to_redeliver(self, now: Moment, before: Moment) -> Value:
        return now.kept("last") is not None

    def picked(self, turn: Turn, body: ChildBody) -> tuple[str, int] | None:
        view = turn.moment.first
        active = view.members("active")
        pick = body.child if body.child is not None else next(iter(active), None)
        if pick is None or pick not in active:
            return None
        return pick, int(view.fields(pick).get("attempts") or 0)

    async def take_next(self, turn: Turn) -> tuple[tuple[str, int] | None, list[str]]:
        """Claim the next pending child (never the released parent), and the ids claim dropped (no row)."""
        pending = turn.moment.first.members("pending")
        if not pending or pending[0] == PARENT:
            return None, []
        got = await jobs.claim(turn.conn, turn.queue(), LEASE_MS)
        taken = got[0] if got else None
        return got, pending[: pending.index(taken)] if taken in pending else pending

    @action("claim", "Claim")
    async def claim(self, turn: Turn, body: Body) -> Outcome:
        got, dropped = await self.take_next(turn)
        gone = (f"Claim dropped {', '.join(dropped)} from pending (no row: a late completion retired it). "
                if dropped else "")
        if got is None:
            return Outcome(text=gone + "No child waits in pending: Claim takes children only, never the parent.",
                           kind="info", detail={"dropped": dropped})
        job_id, token = got
        return Outcome(text=f"{gone}Claimed {job_id}: in active with token {token}, a {LEASE_MS // 1000} s lease; "
                            "nothing is counted yet.", reached=("claimed",),
                       detail={"child": job_id, "token": token, "dropped": dropped})

    @action("complete-child", "Complete child", ChildBody)
    async def complete_child(self, turn: Turn, body: ChildBody) -> Outcome:
        got = self.picked(turn, body)  # a child in active, as read under the lock
        if got is None and body.child is not None:
            return info(f"{body.child} is not in active: claim it first.")
        if got is None:
            got, _ = await self.take_next(turn)  # claimed into active under the lock
            if got is None:
                return info("No child is claimed or waiting in pending: press Reset to start again.")
        job_id, token = got
        before = turn.moment.first.number(PARENT, ":dependencies")
        held = self.parent_fate(turn.moment, turn.moment) == "held"
        await jobs.complete(turn.conn, turn.queue(), job_id, token, result_of(job_id),
                            line=await turn.lineage(None, job_id), tail=turn.after)
        turn.remember(last={"id": job_id, "token": token, "result": result_of(job_id)})
        reached: tuple[str, ...] = ("counted",)
        if before == 1 and held:
            # the last child, with no read back (the click stays 4 round trips): under the lock the
            # counter stood at 1 on a held parent and complete answered 1 for a child in active, so
            # complete.lua's fan-in took it to 0 and released the parent (release_parent.lua)
            reached += ("released",)
        return Outcome(text=f"Completed {job_id} with token {token}: complete answered 1 and counted it off "
                            "the parent.", reached=reached, detail={"child": job_id, "token": token})

    async def send(self, turn: Turn, job_id: str, token: int, result: str) -> str:
        try:
            await jobs.complete(turn.conn, turn.queue(), job_id, token, result,
                                line=await turn.lineage(None, job_id), tail=turn.after)
        except Gone:
            return "0 (no row)"
        except EmqError as exc:
            return str(exc)
        return "1"

    @action("stale", "Complete with a stale token", ChildBody)
    async def stale(self, turn: Turn, body: ChildBody) -> Outcome:
        got = self.picked(turn, body)
        if got is None:
            return info("No child is in active: Claim one, then send its completion with a stale token.")
        job_id, token = got
        answer = await self.send(turn, job_id, token - 1, result_of(job_id))
        return Outcome(text=f"Sent {job_id}'s completion with token {token - 1} while its row holds {token}: "
                            f"complete answered {answer}.", kind="refused",
                       reached=("stale",) if answer.startswith("EMQSTALE") else (),
                       detail={"child": job_id, "answer": answer})

    @action("lapse", "Let the lease lapse", ChildBody)
    async def lapse(self, turn: Turn, body: ChildBody) -> Outcome:
        got = self.picked(turn, body)
        if got is None:
            return info("No child is in active, so no lease can lapse: Claim one first.")
        job_id, token = got
        # the worker went quiet: its deadline wound back to the epoch rather than waiting 30 s
        active = keyspace.queue_key(turn.queue(), "active")
        _, requeued = raise_first(await pipelined(turn.conn, [("ZADD", active, "XX", 1, job_id),
                                                              jobs.requeue_lapsed_call(turn.queue())]))
        requeued = [text(v) or "" for v in requeued or []]
        turn.remember(lapsed={"id": job_id, "token": token})
        return Outcome(text=f"{job_id}'s lease ran out: requeue_lapsed put it back in pending. Its first worker "
                            f"still holds token {token}.", reached=("lapsed",) if job_id in requeued else (),
                       detail={"child": job_id, "token": token, "requeued": requeued})

    @action("late", "Send the late completion")
    async def late(self, turn: Turn, body: Body) -> Outcome:
        lapsed = turn.moment.kept("lapsed")
        if not lapsed:
            return info("No lease has lapsed yet: Claim a child, then Let the lease lapse.")
        job_id, token = str(lapsed["id"]), int(lapsed["token"])
        answer = await self.send(turn, job_id, token, f"late result of {job_id}")
        if answer.startswith("EMQSTALE"):
            why, reached = "the child was claimed again, so its token moved on and the fence refused it", "fenced"
        elif answer == "1":
            why, reached = "its token matched but it was not in active, so the row retired uncounted", "skipped"
        else:
            why, reached = "its row is gone", ""
        return Outcome(text=f"The first worker's late completion of {job_id} (token {token}): complete answered "
                            f"{answer}; {why}.", kind="refused", reached=(reached,) if reached else (),
                       detail={"child": job_id, "answer": answer})

    @action("redeliver", "Redeliver last completion")
    async def redeliver(self, turn: Turn, body: Body) -> Outcome:
        last = turn.moment.kept("last")
        if not last:
            return info("Nothing to redeliver yet: complete a child first.")
        answer = await self.send(turn, str(last["id"]), int(last["token"]), str(last["result"]))
        said = "the row was already retired, so nothing was counted" if answer.startswith("0") else "see the keys"
        return Outcome(text=f"Redelivered {last['id']}'s completion with its old token: complete answered "
                            f"{answer}; {said}.", kind="refused",
                       reached=("redelivered",) if answer.startswith("0") else (),
                       detail={"child": str(last["id"]), "answer": answer})

