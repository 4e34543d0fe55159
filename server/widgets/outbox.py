"""The cross-queue outbox: a parent on one slot, its three children on two others.

A child's `complete` appends to its own queue's `flow:outbox`; "Pump tick" is
one pass built from the library's blocks (`read_page`, `deliver_page`,
`trim`), so an outcome tells a fresh delivery from a duplicate; "Crash before
trim" skips the trim. "Try it as one script" (cluster only) shows CROSSSLOT.
"""

from __future__ import annotations

import msgspec
from redis.asyncio import RedisCluster
from redis.exceptions import ResponseError

from server.emq import flows, jobs, keyspace, pump, registry
from server.valkey.client import node_of
from server.widgets import base, flow, outbox_entries
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.outbox_entries import Lane, LaneCard, LaneChild
from server.widgets.turn import Turn
from server.widgets.view import Moment

PARENT = "JOBparent"
HOME = "outbox.orders"
LANES = ("outbox.mail", "outbox.billing")
# (queue part, child id) in the order "Complete child" takes them.
CHILDREN = (("outbox.mail", "JOBmail1"), ("outbox.billing", "JOBbilling1"), ("outbox.mail", "JOBmail2"))
BATCH = 10
MAX_BLOCKED = 2  # the aged Pump moves a head aside once it has blocked more ticks than this
# "Add a poison entry" stops at this many entries in one lane (outbox and poison list together).
MAX_ENTRIES = 12
# A torn write: not JSON, so it never decodes and blocks its outbox.
POISON = '{"kind":"completed","child":"JOBtorn","parent":'
SOLO, SOLO_CHILD = "JOBsolo", "JOBsolo1"  # "Try it as one script": ids no other action uses
EMPTY = "Both outboxes are empty, so the Pump had nothing to deliver."


class Parent(flow.ParentCard, kw_only=True):
    slot: int  # the home queue's hash slot


class Picture(msgspec.Struct, kw_only=True):
    parent: Parent  # its `processed` the ids, sorted
    queues: list[LaneCard]
    max_blocked: int
    cluster: bool


class Outbox(Widget):
    name = "outbox"
    title = "The cross-queue outbox"
    design = Design(  # DESIGN.md's row
        "outbox", ("Complete child", "Pump tick", "Crash before trim", "Add a poison entry", "Aged pump tick", "Reset"))
    queue_parts = (HOME, *LANES)
    tour = (
        Step("emitted", "A completion waited in its own queue's outbox", (do("complete-child"),)),
        Step("delivered", "A Pump tick delivered it on the parent's slot", (do("pump-tick"),)),
        Step("crashed", "A crash before trim left a delivered entry in place",
             (do("complete-child"), do("crash-before-trim"))),
        Step("duplicate", "The next tick delivered it again: the guard refused the duplicate", (do("pump-tick"),)),
        Step("blocked", "A poison entry blocked the head of an outbox",
             (do("add-poison"), do("complete-child"), do("pump-tick"))),
        Step("aged", "The aged Pump counted the blocked head", (do("aged-pump-tick"), do("aged-pump-tick"))),
        Step("aside", "Past its bound the head went to the poison list and the outbox moved again",
             (do("aged-pump-tick"),)),
    )

    def job_ids(self, part: str) -> tuple[str, ...]:
        return (PARENT,) if part == HOME else tuple(cid for p, cid in CHILDREN if p == part)

    async def land(self, turn: Turn) -> None:
        await flows.add(turn.conn, turn.queue(HOME), {
            "parent": {"id": PARENT, "payload": "ship order 42"},
            "children": [{"id": cid, "payload": f"{part.partition('.')[2]} step for order 42",
                          "queue": turn.queue(part)} for part, cid in CHILDREN],
        })

    def lanes(self, moment: Moment) -> list[Lane]:
        home = moment.view(HOME)
        counted = set(home.fields(PARENT, ":processed")) | set(home.fields(PARENT, ":ignored"))
        return [outbox_entries.lane_of(moment.view(p), home.queue, PARENT, counted) for p in LANES]

    def describe(self, moment: Moment) -> Description:
        home = moment.view(HOME)
        reading_ = flow.read_flow(home, PARENT, [(moment.view(p), cid) for p, cid in CHILDREN])
        lanes = self.lanes(moment)
        parent = flow.card(Parent, reading_.parent, queue=HOME, slot=keyspace.queue_slot(home.queue),
                           processed=sorted(reading_.parent.processed))  # the ids, as the page lists them
        # each child's entry as its lane's Pump judges it (a refused entry never delivers)
        pictured = [lane.as_json(home.queue, [
            flow.card(LaneChild, c, queue=lane.part, entry=lane.waits(c.id),
                      where=flow.where(c.state, c.set, c.counted, lane.waits(c.id)))
            for (part, _), c in zip(CHILDREN, reading_.children) if part == lane.part]) for lane in lanes]
        outboxes = "; ".join(lane.summary(MAX_BLOCKED) for lane in lanes)
        aside = sum(len(lane.aside) for lane in lanes)
        moved = f"; {flow.plural(aside, 'entry', 'entries')} set aside on a poison list" if aside else ""
        fate = reading_.parent.fate() if reading_.parent.state is not None else (
            f"{PARENT} has no row in {HOME}, so no entry for it can deliver: press Reset to land the flow again")
        counted = sum(c.counted is not None for c in reading_.children)
        readout = (f"{counted} of {len(CHILDREN)} children counted on the parent's slot; {outboxes}{moved} "
                   f"→ {reading_.counter()}; {fate}")
        return Description(readout, Picture(
            parent=parent, queues=pictured, max_blocked=MAX_BLOCKED, cluster=home.node is not None))

    dependencies = base.parent_reading("dependencies", PARENT, HOME)

    @reading("trimmed-entry")
    def trimmed_entry(self, now: Moment, before: Moment) -> Value:
        """What left the first outbox whose head blocked: its head, the entry behind it, both, or none."""
        for lane in self.lanes(before):
            if lane.head_blocks:
                old, new = [s.raw for s in lane.entries], now.view(lane.part).items("flow:outbox")
                head = not new or new[0] != old[0]
                behind = len(old) > 1 and old[1] not in new
                return {(True, False): "poison", (False, True): "behind", (True, True): "both"}.get((head, behind),
                                                                                                   "none")
        return "none"

    @reading("blocked-head")
    def blocked_head(self, now: Moment, before: Moment) -> Value:
        return any(lane.head_blocks for lane in self.lanes(now))

    @reading("entries-waiting")
    def entries_waiting(self, now: Moment, before: Moment) -> Value:
        return any(now.view(p).items("flow:outbox") for p in LANES)

    @reading("child-pending")
    def child_pending(self, now: Moment, before: Moment) -> Value:
        return any(cid in now.view(p).members("pending") for p, cid in CHILDREN)

    @action("complete-child", "Complete child")
    async def complete_child(self, turn: Turn, body: Body) -> Outcome:
        found = next(((p, c) for p, c in CHILDREN if c in turn.moment.view(p).members("pending")), None)
        if found is None:
            hint = ("Pump the outboxes." if self.entries_waiting(turn.moment, turn.moment)
                    else "Press Reset to start again.")
            return info(f"No child waits in pending in outbox.mail or outbox.billing: nothing to claim. {hint}")
        part, expected = found
        queue = turn.queue(part)
        got = await turn.claim(part)
        if got is None:
            return info(f"Claim found nothing in {part}'s pending: {expected}'s row is gone.")
        job_id, token, line = got
        await jobs.complete(turn.conn, queue, job_id, token, f"{part.partition('.')[2]} done", line=line,
                            tail=turn.after)
        if line.mode != "xq":
            return Outcome(text=f"Completed {job_id} in {part} (token {token}): complete answered 1.",
                           detail={"child": job_id, "queue": part})
        return Outcome(text=f"Completed {job_id} in {part} (token {token}): its parent is on another slot, so "
                            f"complete appended an entry to {part}'s flow:outbox.",
                       reached=("emitted",), detail={"child": job_id, "queue": part})

    async def sweep(self, turn: Turn, trim: bool) -> Outcome:
        """One Pump pass over each child queue; without the trim, a crash after delivery."""
        clauses: list[str] = []
        fresh = again = 0
        blocked = False
        for part in LANES:
            queue = turn.queue(part)
            page = await pump.read_page(turn.conn, queue, BATCH)
            if not page:
                continue
            report = await pump.deliver_page(turn.conn, queue, page, flow.trusted_by(turn.sandbox))
            removed = await pump.trim(turn.conn, queue, page[: report.delivered]) if trim else 0
            new, dup = report.delivered - report.duplicates, report.duplicates
            fresh, again, blocked = fresh + new, again + dup, blocked or report.blocked is not None
            said = ([f"{new} delivered"] if new else []) + (
                [f"{dup} delivered again, a duplicate the HSETNX guard refused"] if dup else [])
            if report.blocked is not None:
                seen = outbox_entries.judge(report.blocked, queue, turn.queue(HOME), PARENT, whole=True)
                said.append(f"stopped at {outbox_entries.blocked_why(seen)}")
            said.append(f"{removed} trimmed" if trim else "nothing trimmed (the Pump crashed first)")
            clauses.append(f"{part}: " + ", ".join(said))
        if not clauses:
            return self.nothing(turn.moment)
        reached = ((("delivered",) if trim else ("crashed",)) if fresh else ()) + (("duplicate",) if again else ())
        reached += ("blocked",) if blocked and trim else ()
        return Outcome(text=("Pump tick" if trim else "Crash before trim") + " — " + "; ".join(clauses) + ".",
                       kind="ok" if trim and (fresh or again or not blocked) else "refused", reached=reached,
                       detail={"delivered": fresh, "duplicates": again, "blocked": blocked})

    def nothing(self, moment: Moment) -> Outcome:
        """Every outbox was empty: said with what is true of the flow now."""
        hint = (" Complete a child first." if self.child_pending(moment, moment) else
                " All three completions have been delivered." if _counted(moment) >= len(CHILDREN) else "")
        return info(EMPTY + hint)

    @action("pump-tick", "Pump tick")
    async def pump_tick(self, turn: Turn, body: Body) -> Outcome:
        return await self.sweep(turn, trim=True)

    @action("crash-before-trim", "Crash before trim")
    async def crash_before_trim(self, turn: Turn, body: Body) -> Outcome:
        return await self.sweep(turn, trim=False)

    @action("add-poison", "Add a poison entry")
    async def add_poison(self, turn: Turn, body: Body) -> Outcome:
        # Into the lane whose child completes next, so its real entry lands behind the poison.
        part = next((p for p, c in CHILDREN if c in turn.moment.view(p).members("pending")), LANES[0])
        view = turn.moment.view(part)
        held = sum(k.size for k in (view.get("flow:outbox"), view.get("flow:outbox:poison")) if k is not None)
        if held >= MAX_ENTRIES:
            raise base.Refused(f"{part}'s outbox and poison list hold {held} entries, the cap of {MAX_ENTRIES}: "
                          "nothing was added. Press Reset to start again.")
        length = await turn.conn.rpush(keyspace.outbox_key(turn.queue(part)), POISON)
        return Outcome(text=f"A plain RPUSH, not EchoMQ, put a torn entry at [{length - 1}] of {part}'s "
                            "flow:outbox; whatever comes after it waits behind it.", kind="info",
                       detail={"queue": part, "position": length - 1})

    @action("aged-pump-tick", "Aged pump tick")
    async def aged_pump_tick(self, turn: Turn, body: Body) -> Outcome:
        before = turn.moment
        parts = [p for p in LANES if before.view(p).get("flow:outbox") is not None]
        if not parts:
            return self.nothing(before)
        handed = {p: await pump.deliver_flow_completions_aged(
            turn.conn, turn.queue(p), BATCH, MAX_BLOCKED, accept=flow.trusted_by(turn.sandbox)) for p in parts}
        now = await turn.read()
        lanes = {lane.part: lane for lane in self.lanes(now)}
        clauses, reached = [], set()
        for part in parts:
            moved = _size(now, part, "flow:outbox:poison") - _size(before, part, "flow:outbox:poison")
            said = [f"its head blocked past {MAX_BLOCKED} ticks and went to flow:outbox:poison"] if moved else []
            said += [f"{handed[part]} delivered"] if handed[part] else []
            if lanes[part].head_count:
                said.append(f"its head still blocks, counted {lanes[part].head_count} of {MAX_BLOCKED} ticks")
                reached.add("aged")
            reached |= {"aside"} if moved else set()
            clauses.append(f"{part}: " + (", ".join(said) or "nothing moved"))
        fresh = _counted(now) - _counted(before)
        reached |= ({"delivered"} if fresh else set()) | ({"duplicate"} if sum(handed.values()) > fresh else set())
        return Outcome(text="Aged pump tick — " + "; ".join(clauses) + ".", reached=tuple(sorted(reached)),
                       detail={"delivered": sum(handed.values()), "applied": fresh})

    @action("one-script", "Try it as one script")
    async def one_script(self, turn: Turn, body: Body) -> Outcome:
        """The cross-queue add as ONE `enqueue_flow`, its KEYS on two slots: the cluster refuses it."""
        conn = turn.conn
        if not isinstance(conn, RedisCluster):
            raise base.Refused("Try it as one script needs a cluster: on one server every slot is local and nothing "
                          "refuses it. Run `emqlab serve --cluster` to see the refusal.")
        home, other = turn.queue(HOME), turn.queue(LANES[0])
        keys = [keyspace.job_key(home, SOLO), keyspace.dependencies_key(home, SOLO),
                keyspace.queue_key(home, "pending"), keyspace.job_key(other, SOLO_CHILD)]
        node = conn.get_node_from_key(keys[0])
        script = registry.script("enqueue_flow")
        await script.load(conn, keys)
        try:
            # Sent to the parent's node by hand: redis-py's own slot check would refuse it before it left.
            await conn.execute_command("EVALSHA", script.sha, len(keys), *keys, SOLO, "one script, two queues",
                                       "1", SOLO_CHILD, "mail step", target_nodes=node)
            error = ""
        except ResponseError as exc:
            # redis-py names the reply's code by the exception's class; put the word back
            error = str(exc) if str(exc).startswith("CROSSSLOT") else f"CROSSSLOT {exc}"
        # what the script would have written: two rows, the counter, and JOBsolo in pending (one slot per call)
        written = sum([int(await conn.exists(k)) for k in (keys[0], keys[1], keys[3])]) + int(
            await conn.zscore(keys[2], SOLO) is not None)
        where = f"{HOME} and {LANES[0]}"
        if not error:
            return info(f"EVALSHA enqueue_flow with KEYS in {where} was accepted.")
        return Outcome(text=f"One enqueue_flow with KEYS in {where}: the cluster refused it with {error}. "
                            + ("Nothing was written." if not written else f"{written} of its writes are there."),
                       kind="refused", detail={"error": error, "node": node_of(conn, keys[0]),
                                               "other": node_of(conn, keys[3]), "written": written})


def _size(moment: Moment, part: str, suffix: str) -> int:
    found = moment.view(part).get(suffix)
    return found.size if found is not None else 0


def _counted(moment: Moment) -> int:
    home = moment.view(HOME)
    return len(home.fields(PARENT, ":processed")) + len(home.fields(PARENT, ":ignored"))
