"""The cross-queue outbox: a parent on one slot, its children on two others.

The flow is landed by `flows.add` (the real cross-queue path: `hold_parent`,
then `enqueue_flow_child` per child). "Complete child" runs the real `claim`
and `complete`; a cross-queue completion cannot reach the parent's slot, so it
becomes an entry in the child's own `flow:outbox` and `:dependencies` does not
move. "Pump tick" is one Pump pass over every child queue, built from the
library's own blocks (`read_page`, `deliver_page`, `trim`) so the outcome can
say how many deliveries the HSETNX guard refused. "Crash before trim" stops a
pass after delivery; "Add a poison entry" writes a malformed entry with a
plain RPUSH; "Aged pump tick" runs `deliver_flow_completions_aged`.
"Try it as one script" (on a cluster only, `crossslot.py`) sends the
cross-queue add as ONE `enqueue_flow` whose KEYS span two queues, so the
learner sees the cluster's own CROSSSLOT refusal.
"""

from __future__ import annotations

from typing import Any, ClassVar

from server.emq import flows, jobs, keyspace, pump
from server.widgets import crossslot, flow, snapshot
from server.widgets.base import Context, Outcome, Reading, Refusal, Widget, action
from server.widgets.outcome import OutcomeKind
from server.widgets.snapshot import QueueView

PARENT = "JOBparent"
# (queue part, child id) in the order "Complete child" takes them; two queues
# besides the parent's, so the picture spans three slots.
CHILDREN: tuple[tuple[str, str], ...] = (("mail", "JOBmail1"), ("billing", "JOBbilling1"), ("mail", "JOBmail2"))
CHILD_PARTS = ("mail", "billing")
BATCH = 10
# "Add a poison entry" stops at this many entries in a queue's outbox and
# poison lists together: every entry rides in every page's snapshot.
MAX_ENTRIES = 12
MAX_BLOCKED = 2  # the aged tick moves a head aside once it has blocked more ticks than this
# A torn write: not JSON, so decode_entry refuses it and it blocks the outbox.
POISON = '{"kind":"completed","child":"JOBtorn","parent":'
# What `#outbox-step=N` replays and the static trace records: the dive's
# story, one action per step.
TOUR = (
    "complete-child", "pump-tick", "complete-child", "crash-before-trim", "pump-tick",
    "add-poison", "complete-child", "pump-tick", "aged-pump-tick", "aged-pump-tick", "aged-pump-tick",
)


def flow_spec(ctx: Context) -> dict[str, Any]:
    return {
        "parent": {"id": PARENT, "payload": "ship order 42"},
        "children": [
            {"id": cid, "payload": f"{part} step for order 42", "queue": ctx.queue("outbox", part)}
            for part, cid in CHILDREN
        ],
    }


def entries(n: int) -> str:
    return flow.plural(n, "entry", "entries")


class Outbox(Widget):
    name = "outbox"
    title = "The cross-queue outbox"
    queue_parts = (("outbox", "orders"), ("outbox", "mail"), ("outbox", "billing"))
    tour = TOUR
    labels: ClassVar[dict[str, str]] = {
        "complete-child": "Complete child", "pump-tick": "Pump tick", "crash-before-trim": "Crash before trim",
        "add-poison": "Add a poison entry", "aged-pump-tick": "Aged pump tick", "reset": "Reset",
        "one-script": "Try it as one script",
    }

    def job_ids(self, queue: str) -> list[str]:
        if queue.endswith(".outbox.orders"):
            return [PARENT]
        return [cid for part, cid in CHILDREN if queue.endswith(f".outbox.{part}")]

    def parent_queue(self, ctx: Context) -> str:
        return ctx.queue("outbox", "orders")

    async def land(self, ctx: Context) -> None:
        await flows.add(ctx.conn, self.parent_queue(ctx), flow_spec(ctx))

    # -- the picture ---------------------------------------------------------
    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        home, lanes = views[0], dict(zip(CHILD_PARTS, views[1:]))
        reading = flow.read_flow(home, PARENT, [(lanes[part], cid) for part, cid in CHILDREN])
        parent = {**reading.parent.as_json(), "slot": home.slot, "processed": sorted(reading.parent.processed)}
        queues = []
        for part, view in lanes.items():
            head = view.get("flow:outbox:head")
            queues.append({
                "part": part, "queue": view.queue, "slot": view.slot,
                "children": [c.as_json() for c in reading.children if c.queue == view.queue],
                "outbox": [e.as_json() for e in reading.outboxes.get(view.queue, [])],
                "poison": [e.as_json() for e in reading.poison.get(view.queue, [])],
                "head_count": int(head.value.get("count", 0)) if head else 0,
            })
        return {
            "readout": self.readout(reading),
            "picture": {"parent": parent, "queues": queues, "max_blocked": MAX_BLOCKED,
                        "cluster": home.node is not None},
        }

    @staticmethod
    def readout(reading: flow.FlowReading) -> str:
        if reading.parent.state is None:
            return "No flow in these queues: press Reset to land it again."
        waiting, applied = reading.entries("waiting"), reading.entries("applied")
        said = [f"{reading.counted()} of {len(CHILDREN)} completions delivered to the parent's slot",
                f"{flow.plural(waiting, 'entry', 'entries')} waiting in outboxes"]
        if applied:
            said.append(f"{flow.plural(applied, 'entry', 'entries')} delivered, not yet trimmed")
        if reading.blocking():
            said.append(f"{flow.plural(reading.blocking(), 'entry', 'entries')} that cannot be decoded "
                        "sitting in an outbox")
        if reading.aside():
            said.append(f"{reading.aside()} set aside as poison")
        return ", ".join(said) + f" → {reading.counter()}; {reading.parent.fate()}"

    # -- reading a few values for outcome sentences ---------------------------
    async def parent_before(self, ctx: Context) -> tuple[int, int]:
        """The parent's :dependencies and how many children it has counted, as
        the action's lock read them (read now when it did not)."""
        view = ctx.take_start() or await snapshot.read_queue(ctx.conn, self.parent_queue(ctx), [PARENT])
        deps = view.row(PARENT, ":dependencies")
        counted = [view.row(PARENT, sub) for sub in (":processed", ":ignored")]
        return int(deps.value) if deps else 0, sum(len(k.value) for k in counted if k)

    # -- actions -------------------------------------------------------------
    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        async with ctx.conn.pipeline(transaction=False) as pipe:
            for part, cid in CHILDREN:
                pipe.zscore(keyspace.queue_key(ctx.queue("outbox", part), "pending"), cid)
            waiting = await pipe.execute()
        for (part, _cid), score in zip(CHILDREN, waiting, strict=True):
            if score is None:
                continue
            queue = ctx.queue("outbox", part)
            claimed = await jobs.claim(ctx.conn, queue)
            if claimed is None:
                break
            job_id, token = claimed
            await jobs.complete(ctx.conn, queue, job_id, token, f"{part} done", tail=ctx.tail)
            held = await ctx.conn.llen(keyspace.outbox_key(queue))
            deps = Reading(("GET", keyspace.dependencies_key(self.parent_queue(ctx), PARENT)))
            return Outcome(
                f"Completed {job_id} in {queue} (token {token}). Its completion cannot reach the parent's "
                f"slot, so it is now entry [{held - 1}] of {part}'s flow:outbox; "
                ":dependencies stays at {{deps}} until the Pump delivers it.",
                detail={"child": job_id, "queue": queue, "outbox": held, "dependencies": "{{=deps}}"},
                reads={"deps": deps},
            )
        return Outcome("No child is waiting in pending: every child has completed. Pump the outboxes, or Reset.",
                       "info")

    async def sweep(self, ctx: Context, trim: bool) -> Outcome:
        """One pass over each child queue's outbox; without the trim, a crash."""
        before, _ = await self.parent_before(ctx)
        clauses, reports = [], {}
        for part in CHILD_PARTS:
            queue = ctx.queue("outbox", part)
            page = await pump.read_page(ctx.conn, queue, BATCH)
            if not page:
                continue
            report = await pump.deliver_page(ctx.conn, page)
            removed = await pump.trim(ctx.conn, queue, page[: report.delivered]) if trim else 0
            reports[part] = {"read": len(page), "delivered": report.delivered,
                             "duplicates": report.duplicates, "blocked": report.blocked is not None, "trimmed": removed}
            said = []
            fresh = report.delivered - report.duplicates
            if fresh:
                said.append(f"{entries(fresh)} delivered")
            if report.duplicates:
                said.append(f"{entries(report.duplicates)} delivered again: the guard refused "
                            f"{'it' if report.duplicates == 1 else 'them'} (duplicate)")
            if report.blocked is not None:
                said.append("the head is blocked by an entry that does not deliver (poison), so nothing behind it moved"
                            if report.delivered == 0 else "then it stopped at an entry that does not deliver (poison)")
            if trim:
                said.append(f"{removed} trimmed")
            elif report.delivered:
                said.append("the Pump crashed before the trim, so "
                            + ("the delivered entry is" if report.delivered == 1 else "the delivered entries are")
                            + " still in the outbox")
            clauses.append(f"{part}'s outbox: " + ", ".join(said))
        if not clauses:
            return Outcome("Every outbox is empty: complete a child first.", "info", {"queues": {}})
        head = "Pump tick" if trim else "Crash before trim (read and delivered, no trim)"
        clause, reads = flow.after_signal(self.parent_queue(ctx), PARENT, before)
        kind: OutcomeKind = "ok" if trim else "refused"
        return Outcome(f"{head}. " + "; ".join(clauses) + f". {clause}.", kind, {"queues": reports}, reads=reads)

    @action("pump-tick")
    async def pump_tick(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        return await self.sweep(ctx, trim=True)

    @action("crash-before-trim")
    async def crash_before_trim(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        return await self.sweep(ctx, trim=False)

    @action("add-poison")
    async def add_poison(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        # Into the queue whose child completes next, so its real entry lands behind it.
        part = "mail"
        for cpart, cid in CHILDREN:
            if await ctx.conn.zscore(keyspace.queue_key(ctx.queue("outbox", cpart), "pending"), cid) is not None:
                part = cpart
                break
        queue = ctx.queue("outbox", part)
        held = sum([await ctx.conn.llen(k) for k in (keyspace.outbox_key(queue), keyspace.poison_key(queue))])
        if held >= MAX_ENTRIES:
            raise Refusal(f"{part}'s flow:outbox and flow:outbox:poison hold {held} entries, the cap of "
                          f"{MAX_ENTRIES}: nothing was added. Press Reset to start again.")
        length = await ctx.conn.rpush(keyspace.outbox_key(queue), POISON)
        return Outcome(
            f"A teaching action, not EchoMQ: a plain RPUSH appended a malformed entry to {part}'s flow:outbox "
            f"(entry [{length - 1}]). No script writes entries like this; it stands for a torn or corrupt one. "
            f"Anything appended after it waits behind it.",
            "info", {"queue": queue, "position": length - 1},
        )

    @action("aged-pump-tick")
    async def aged_pump_tick(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        before, counted_before = await self.parent_before(ctx)
        clauses, reports = [], {}
        for part in CHILD_PARTS:
            queue = ctx.queue("outbox", part)
            if not await ctx.conn.llen(keyspace.outbox_key(queue)):
                continue
            aside_before = await ctx.conn.llen(keyspace.poison_key(queue))
            delivered = await pump.deliver_flow_completions_aged(ctx.conn, queue, BATCH, MAX_BLOCKED)
            moved = await ctx.conn.llen(keyspace.poison_key(queue)) - aside_before
            count = int(await ctx.conn.hget(keyspace.outbox_head_key(queue), "count") or 0)
            reports[part] = {"delivered": delivered, "moved": moved, "head_count": count}
            said = [f"{entries(delivered)} read and handed on"] if delivered else []
            if moved:
                said.append(f"a head that had blocked {MAX_BLOCKED} ticks was moved to flow:outbox:poison on "
                            "this one, and the outbox moves again")
            if count:
                said.append(f"the head is blocked; the aged Pump has counted it blocked for "
                            f"{flow.plural(count, 'tick')} and moves it aside on tick {MAX_BLOCKED + 1}")
            clauses.append(f"{part}'s outbox: " + (", ".join(said) or "nothing moved"))
        if not clauses:
            return Outcome("Every outbox is empty: complete a child first.", "info", {"queues": {}})
        fresh = await self.counted_now(ctx) - counted_before
        handed = sum(r["delivered"] for r in reports.values())
        again = handed - fresh
        applied = (f"{entries(fresh)} newly applied on the parent's slot" if fresh
                   else "nothing new applied on the parent's slot")
        if again > 0:
            them = "it" if again == 1 else "them"
            applied += f"; {entries(again)} had been applied already, so the guard refused {them} (duplicate)"
        clause, reads = flow.after_signal(self.parent_queue(ctx), PARENT, before)
        return Outcome("Aged pump tick. " + "; ".join(clauses) + f". {applied.capitalize()}. {clause}.",
                       detail={"queues": reports, "applied": fresh, "duplicates": max(again, 0)}, reads=reads)

    async def counted_now(self, ctx: Context) -> int:
        """How many children the parent has counted (:processed and :ignored)."""
        pq = self.parent_queue(ctx)
        async with ctx.conn.pipeline(transaction=False) as pipe:
            pipe.hlen(keyspace.processed_key(pq, PARENT))
            pipe.hlen(keyspace.ignored_key(pq, PARENT))
            done, ignored = await pipe.execute()
        return int(done) + int(ignored)

    @action("one-script")
    async def one_script(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """The cross-queue add as ONE script, refused by the cluster (server/widgets/crossslot.py)."""
        return await crossslot.try_one_script(ctx.conn, self.parent_queue(ctx), ctx.queue("outbox", "mail"))
