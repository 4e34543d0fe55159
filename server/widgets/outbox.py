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
"Try it as one script" (on a cluster only) sends the cross-queue add as ONE
`enqueue_flow` whose KEYS span two queues, straight to the node owning the
first key, so the learner sees the cluster's own CROSSSLOT refusal.
"""

from __future__ import annotations

from typing import Any

from redis.exceptions import ClusterCrossSlotError, ResponseError

from server.valkey import connect
from server.emq import flows, jobs, keyspace, pump, registry, results
from server.web.guard import Refused
from server.widgets.snapshot import QueueView
from server.widgets.base import Context, Outcome, Widget, action, parent_fate

PARENT = "JOBparent"
# (queue part, child id) in the order "Complete child" takes them; two queues
# besides the parent's, so the picture spans three slots.
CHILDREN: tuple[tuple[str, str], ...] = (("mail", "JOBmail1"), ("billing", "JOBbilling1"), ("mail", "JOBmail2"))
CHILD_PARTS = ("mail", "billing")
BATCH = 10
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


def listed(view: QueueView, suffix: str) -> list[str]:
    """The items of one of the queue's lists, [] when Valkey holds no such key."""
    key = view.get(suffix)
    return list(key.value) if key is not None else []


def entries(n: int) -> str:
    return "1 entry" if n == 1 else f"{n} entries"


def entry_text(raw: str) -> dict[str, Any]:
    """One raw list item in words: decoded when it is an entry, flagged when poison."""
    try:
        e = pump.decode_entry(raw)
    except pump.PoisonEntry:
        return {"text": f"poison: {raw[:60]}", "poison": True, "child": None}
    return {"text": f"{e.kind} {e.child} → {e.parent}", "poison": False, "child": e.child}


class Outbox(Widget):
    name = "outbox"
    title = "The cross-queue outbox"
    queue_parts = (("outbox", "orders"), ("outbox", "mail"), ("outbox", "billing"))
    tour = TOUR
    labels = {
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
        home, lanes = views[0], views[1:]
        row = home.row(PARENT)
        deps = home.row(PARENT, ":dependencies")
        processed = home.row(PARENT, ":processed")
        counted = dict(processed.value) if processed else {}
        parent = {
            "id": PARENT, "queue": home.queue, "slot": home.slot,
            "state": row.value.get("state") if row else None,
            "dependencies": int(deps.value) if deps else None,
            "processed": sorted(counted),
            "sets": home.sets_of(PARENT),
        }
        queues, waiting, blocking, poisoned = [], 0, 0, 0
        for part, view in zip(CHILD_PARTS, lanes):
            outbox = [entry_text(r) for r in listed(view, "flow:outbox")]
            poison = [entry_text(r) for r in listed(view, "flow:outbox:poison")]
            head = view.get("flow:outbox:head")
            in_outbox = {e["child"] for e in outbox}
            children = []
            for cpart, cid in CHILDREN:
                if cpart != part:
                    continue
                crow = view.row(cid)
                if crow is not None:
                    where = next(iter(view.sets_of(cid)), None)
                    children.append({"id": cid, "state": crow.value.get("state"), "where": f"in {where or 'no state set'}"})
                else:  # complete deletes the row; where its signal is tells the rest
                    note = "entry in the outbox" if cid in in_outbox else "counted on the parent" if cid in counted else "row gone"
                    children.append({"id": cid, "state": "completed", "where": note})
            waiting += sum(not e["poison"] for e in outbox)
            blocking += sum(e["poison"] for e in outbox)
            poisoned += len(poison)
            queues.append({
                "part": part, "queue": view.queue, "slot": view.slot, "children": children,
                "outbox": outbox, "poison": poison,
                "head_count": int(head.value.get("count", 0)) if head else 0,
            })
        return {
            "readout": self.readout(parent, waiting, blocking, poisoned),
            "picture": {"parent": parent, "queues": queues, "max_blocked": MAX_BLOCKED,
                        "cluster": home.node is not None},
        }

    @staticmethod
    def readout(parent: dict[str, Any], waiting: int, blocking: int, poisoned: int) -> str:
        if parent["state"] is None:
            return "No flow in these queues: press Reset to land it again."
        fate = parent_fate(parent["state"], parent["sets"])
        aside = f", {entries(blocking)} that cannot be decoded sitting in an outbox" if blocking else ""
        aside += f", {poisoned} set aside as poison" if poisoned else ""
        return (
            f"{len(parent['processed'])} of {len(CHILDREN)} completions delivered to the parent's slot, "
            f"{waiting} waiting in outboxes{aside} → :dependencies = {parent['dependencies']}; {fate}"
        )

    # -- reading a few values for outcome sentences ---------------------------
    async def parent_now(self, ctx: Context) -> tuple[int, str]:
        pq = self.parent_queue(ctx)
        deps = await results.dependencies(ctx.conn, pq, PARENT)
        state = await ctx.conn.hget(keyspace.job_key(pq, PARENT), "state")
        return deps, state.decode() if isinstance(state, bytes) else (state or "gone")

    async def deps_sentence(self, ctx: Context, before: int) -> str:
        after, state = await self.parent_now(ctx)
        moved = f":dependencies stayed at {after}" if after == before else f":dependencies fell from {before} to {after}"
        fate = {"pending": "the parent is released into pending", "awaiting_children": "the parent stays held"}.get(
            state, f"the parent is {state}"
        )
        return f"{moved}; {fate}."

    # -- actions -------------------------------------------------------------
    @action("complete-child")
    async def complete_child(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        for part, cid in CHILDREN:
            queue = ctx.queue("outbox", part)
            if await ctx.conn.zscore(keyspace.queue_key(queue, "pending"), cid) is None:
                continue
            claimed = await jobs.claim(ctx.conn, queue)
            if claimed is None:
                break
            job_id, token = claimed
            await jobs.complete(ctx.conn, queue, job_id, token, f"{part} done")
            entries = await pump.read_all(ctx.conn, queue)
            deps, _ = await self.parent_now(ctx)
            return Outcome(
                f"Completed {job_id} in {queue} (token {token}). Its completion cannot reach the parent's "
                f"slot, so it is now entry [{len(entries) - 1}] of {part}'s flow:outbox; "
                f":dependencies stays at {deps} until the Pump delivers it.",
                detail={"child": job_id, "queue": queue, "outbox": len(entries), "dependencies": deps},
            )
        return Outcome("No child is waiting in pending: every child has completed. Pump the outboxes, or Reset.", "info")

    async def sweep(self, ctx: Context, trim: bool) -> Outcome:
        """One pass over each child queue's outbox; without the trim, a crash."""
        before, _ = await self.parent_now(ctx)
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
        tail = await self.deps_sentence(ctx, before)
        kind = "ok" if trim else "refused"
        return Outcome(f"{head}. " + "; ".join(clauses) + f". {tail}", kind, {"queues": reports})

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
        length = await ctx.conn.rpush(keyspace.outbox_key(queue), POISON)
        return Outcome(
            f"A teaching action, not EchoMQ: a plain RPUSH appended a malformed entry to {part}'s flow:outbox "
            f"(entry [{length - 1}]). No script writes entries like this; it stands for a torn or corrupt one. "
            f"Anything appended after it waits behind it.",
            "info", {"queue": queue, "position": length - 1},
        )

    @action("aged-pump-tick")
    async def aged_pump_tick(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        before, _ = await self.parent_now(ctx)
        clauses, reports = [], {}
        for part in CHILD_PARTS:
            queue = ctx.queue("outbox", part)
            if not await ctx.conn.llen(keyspace.outbox_key(queue)):
                continue
            aside_before = await ctx.conn.llen(keyspace.poison_key(queue))
            delivered = await pump.deliver_flow_completions_aged(ctx.conn, queue, BATCH, MAX_BLOCKED)
            moved = await ctx.conn.llen(keyspace.poison_key(queue)) - aside_before
            count = await ctx.conn.hget(keyspace.outbox_head_key(queue), "count")
            reports[part] = {"delivered": delivered, "moved": moved, "head_count": int(count or 0)}
            said = [f"{entries(delivered)} delivered"]
            if moved:
                said.append(f"a head that blocked past {MAX_BLOCKED} ticks was moved to flow:outbox:poison, "
                            "and the outbox moves again")
            if count:
                said.append(f"the head is blocked; the aged Pump has counted it {count} of {MAX_BLOCKED} ticks "
                            "before it moves it aside")
            clauses.append(f"{part}'s outbox: " + ", ".join(said))
        if not clauses:
            return Outcome("Every outbox is empty: complete a child first.", "info", {"queues": {}})
        tail = await self.deps_sentence(ctx, before)
        return Outcome("Aged pump tick. " + "; ".join(clauses) + f". {tail}", detail={"queues": reports})

    @action("one-script")
    async def one_script(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """The cross-queue add as ONE script: the real `enqueue_flow` with the
        parent's keys in outbox.orders and a child's row in outbox.mail. It
        goes by EVALSHA straight to the node owning the first key (redis-py's
        own slot check would refuse it before it left), so the refusal is the
        cluster's. Nothing is written: a refused script never runs."""
        conn = ctx.conn
        if not connect.is_cluster(conn):
            raise Refused(409, "Try it as one script needs a cluster: on one server every slot is local and "
                               "nothing refuses it. Run `emqlab serve --cluster`.")
        home, other = self.parent_queue(ctx), ctx.queue("outbox", "mail")
        parent, child = "JOBsolo", "JOBsolo1"
        keys = [keyspace.job_key(home, parent), keyspace.dependencies_key(home, parent),
                keyspace.queue_key(home, "pending"), keyspace.job_key(other, child)]
        args = [parent, "one script, two queues", "1", child, "mail step, same script"]
        node = conn.get_node_from_key(keys[0])
        sha = await conn.execute_command("SCRIPT", "LOAD", registry.script_source("enqueue_flow"), target_nodes=node)
        try:
            await conn.execute_command("EVALSHA", sha, len(keys), *keys, *args, target_nodes=node)
        except ClusterCrossSlotError as exc:
            # redis-py parses the reply's code word into the exception class.
            error = f"CROSSSLOT {exc}"
        except ResponseError as exc:
            error = str(exc)
        else:  # pragma: no cover - a cluster always refuses two slots in one script
            error = ""
        written = 0
        for key in keys:  # one slot per call
            written += int(await conn.exists(key))
        where = (f"{home} (hash slot {keyspace.hash_slot(keys[0])}, node {node.name}) and "
                 f"{other} (hash slot {keyspace.hash_slot(keys[3])}, node {connect.node_of(conn, keys[3])})")
        if not error:
            return Outcome(f"EVALSHA enqueue_flow with KEYS in {where} was accepted.", "info",
                           {"error": None, "written": written})
        return Outcome(
            f"One script, two queues: EVALSHA enqueue_flow with KEYS in {where}, sent to node {node.name}. "
            f"The cluster refused it: {error}. Nothing was written ({written} of its {len(keys)} keys exist): "
            f"a cross-queue add has to be walked by the host, slot by slot, as flows.add does.",
            "refused", {"error": error, "node": node.name, "keys": keys, "written": written},
        )
