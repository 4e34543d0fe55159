"""The results reader: three pure reads of what the fan-in wrote on a parent.

A parent held on three children under *ignore the dependency*; completions and
deaths at the cap fill `:processed` and `:ignored`. "Read the results" calls
`server.emq.results` and proves it wrote nothing (DUMPs before and after); its
answers are kept in the lab state, beside the keys they came from.
"""

from __future__ import annotations

import msgspec

from server.emq import flows, jobs, results
from server.widgets import base, flow
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.turn import Turn
from server.widgets.view import Kept, Moment

PARENT = "JOBquote"
CHILDREN = ("JOBleg1", "JOBleg2", "JOBleg3")
# What each child completes with: the value the fan-in records in :processed.
VALUES = {"JOBleg1": "subtotal 40.00", "JOBleg2": "tax 8.00", "JOBleg3": "shipping 5.00"}
ERROR = "carrier API timed out"


def dict_words(found: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in found.items()) + "}" if found else "{} (empty)"


class Picture(msgspec.Struct, kw_only=True):
    parent: flow.ParentCard
    children: list[flow.ChildCard]
    read: Kept | None  # what the last reads returned (`read` in the lab state), and whether it is `current`


class ResultsReader(Widget):
    name = "results"
    title = "The results reader"
    design = Design(  # DESIGN.md's row
        "results", ("Complete child", "Fail child at the cap", "Read the results", "Reset"))
    queue_parts = ("results",)
    rows = (PARENT, *CHILDREN)
    tour = (
        Step("completed", "A completion recorded its value in :processed", (do("complete-child"),)),
        Step("ignored", "A death at the cap recorded in :ignored, counted like a completion", (do("fail-child"),)),
        Step("read", "The three reads answered and wrote nothing", (do("read"),)),
        Step("released", "The last child released the parent", (do("complete-child"),)),
        Step("accounted", "Read after the release: every child accounted for", (do("read"),)),
    )

    async def land(self, turn: Turn) -> None:
        # ignore the dependency: a child dead at its cap lands in :ignored and still counts down
        await flows.add(turn.conn, turn.queue(), flow.spec(PARENT, "price the quote", CHILDREN, "leg {i}",
                                                           ignore_dependency_on_failure=True))

    def describe(self, moment: Moment) -> Description:
        view = moment.first
        found = flow.read_flow(view, PARENT, [(view, c) for c in CHILDREN])
        read = moment.kept("read")
        if read is not None:
            # the reads describe the moment they ran: say whether Valkey still holds it
            now = {"values": view.fields(PARENT, ":processed"), "ignored": view.fields(PARENT, ":ignored"),
                   "dependencies": view.number(PARENT, ":dependencies") or 0}
            read["current"] = all(read.get(k) == v for k, v in now.items())
        if found.parent.state is not None:
            readout = f"{found.tally()} → {found.counter()}; {found.parent.fate()}"
        elif found.parent.dependencies is None and not any(c.state for c in found.children) and not found.counted():
            readout = "No flow in this queue: press Reset to land it again."
        else:
            readout = (f"The parent's row is gone ({found.tally()}, {found.counter()}): nothing will run it. "
                       "Press Reset to land the flow again.")
        return Description(readout, Picture(
            parent=found.parent, children=found.children, read=read))

    dependencies = base.parent_reading("dependencies", PARENT)
    children_outstanding = base.parent_reading("children-outstanding", PARENT)
    parent_fate = base.parent_reading("parent-fate", PARENT)

    @reading("child-to-fail")
    def child_to_fail(self, now: Moment, before: Moment) -> Value:
        """The parent waits and a child is there for the press to take: with none, nothing would run."""
        view = now.first
        pending = view.members("pending")
        there = any(c in CHILDREN and view.row(c) is not None for c in view.members("active")) or (
            bool(pending) and pending[0] in CHILDREN)
        return bool(self.children_outstanding(now, before)) and there

    @reading("read-dependencies")
    def read_dependencies(self, now: Moment, before: Moment) -> Value:
        read = now.kept("read")
        return int(read["dependencies"]) if read and isinstance(read.get("dependencies"), int) else "no read"

    async def next_child(self, turn: Turn) -> tuple[str, int, jobs.Lineage] | Outcome:
        """The child this press acts on: one a press cut short left in active, else the next pending child."""
        view = turn.moment.first
        held = [c for c in view.members("active") if c in CHILDREN and view.row(c) is not None]
        pending = view.members("pending")
        if held:
            return held[0], int(view.fields(held[0]).get("attempts") or 0), await turn.lineage(None, held[0])
        if pending and pending[0] in CHILDREN and (got := await turn.claim()):
            return got
        if view.fields(PARENT).get("state") == "pending":
            return info("Every child has been counted and the parent released: press Reset to start again.")
        return info("No child waits in pending or active: press Reset to land the flow again.")

    async def counted(self, turn: Turn, job_id: str, into: str, milestone: str) -> tuple[str, ...]:
        """The milestones the keys bear out, read back after the signal."""
        now = (await turn.read()).first
        reached = (milestone,) if job_id in now.fields(PARENT, into) else ()
        return reached + (("released",) if now.fields(PARENT).get("state") == "pending" else ())

    @action("complete-child", "Complete child")
    async def complete_child(self, turn: Turn, body: Body) -> Outcome:
        if isinstance(got := await self.next_child(turn), Outcome):
            return got
        job_id, token, line = got
        value = VALUES.get(job_id, job_id)
        await jobs.complete(turn.conn, turn.queue(), job_id, token, value, line=line, tail=turn.after)
        reached = await self.counted(turn, job_id, ":processed", "completed")
        return Outcome(text=f"Completed {job_id} with {value!r}: complete answered 1 and the fan-in recorded it in "
                            ":processed.", reached=reached,
                       detail={"child": job_id, "result": value})

    @action("fail-child", "Fail child at the cap")
    async def fail_child(self, turn: Turn, body: Body) -> Outcome:
        if isinstance(got := await self.next_child(turn), Outcome):
            return got
        job_id, token, line = got
        # max_attempts=1: this first failure is already at the cap
        answer = await jobs.fail(turn.conn, turn.queue(), job_id, token, ERROR, max_attempts=1, line=line)
        reached = await self.counted(turn, job_id, ":ignored", "ignored")
        return Outcome(text=f"Failed {job_id} at the cap: fail answered {answer}; its policy, ignore the dependency, "
                            "put the error in :ignored.", reached=reached,
                       detail={"child": job_id, "outcome": answer})

    @action("read", "Read the results")
    async def read(self, turn: Turn, body: Body) -> Outcome:
        queue = turn.queue()
        names = {k.name for k in turn.moment.first.keys}
        before = await turn.dumps(sorted(names))
        values = await results.children_values(turn.conn, queue, PARENT)
        deps = await results.dependencies(turn.conn, queue, PARENT)
        ignored = await results.ignored_failures(turn.conn, queue, PARENT)
        names |= {k.name for k in (await turn.read()).first.keys}
        after = await turn.dumps(sorted(names))
        unchanged = before == after  # a key the reads created would be absent before and present after
        turn.remember(read={"values": values, "dependencies": deps, "ignored": ignored,
                            "keys": len(after), "unchanged": unchanged})
        reached: tuple[str, ...] = ("read",) if unchanged else ()
        if unchanged and deps == 0 and len(values) + len(ignored) == len(CHILDREN):
            reached += ("accounted",)
        proof = "no key changed (DUMPs equal)" if unchanged else "yet the queue's keys changed meanwhile"
        return Outcome(text=f"The reads answered children_values → {dict_words(values)}, dependencies → {deps}, "
                            f"ignored_failures → {dict_words(ignored)}; {proof}.", kind="ok" if unchanged else "info",
                       reached=reached,
                       detail={"dependencies": deps, "unchanged": unchanged,
                               "values": dict_words(values), "ignored": dict_words(ignored)})

