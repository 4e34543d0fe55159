"""The native refusal: one completion line, sent to two executors.

A same-queue flow (JOBparent held on one child, JOBchild, claimed) and a
flat job (JOBflat, claimed) in the queue `<sandbox>.native`. Each button
sends one real command line and keeps what happened in the lab hash: the
line, Valkey's reply, the queue's keys before and after, and whether any key
changed by a single byte (DUMP compared).

* "Send as a script": the EVALSHA line `jobs.complete` sends for the child
  (complete.lua with the same-queue flow layout); it completes the child.
* "Send as EMQ.COMPLETE": the same keys and values as the module's command,
  refused straight after numkeys.
* "Send the flat form": the two-key form on the child, refused once the
  command has read `parent` on its row.
* "Complete a flat job natively": the two-key form on JOBflat, which the
  module completes.

On a Valkey without the EMQ module the native lines get Valkey's own
"unknown command" reply, and the widget says the executor is absent there.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from server.emq import flows, jobs, keyspace
from server.emq.wire import Fields
from server.valkey import native as module
from server.widgets import flow
from server.widgets import native_calls as calls
from server.widgets.base import Context, Outcome, Widget, action
from server.widgets.outcome import OutcomeKind
from server.widgets.snapshot import QueueView

PARENT, CHILD, FLAT = "JOBparent", "JOBchild", "JOBflat"
RESULT = "packed"  # one word: the line reads as it was sent


def flow_spec() -> dict[str, Any]:
    return {"parent": {"id": PARENT, "payload": "ship the order"},
            "children": [{"id": CHILD, "payload": "pack the box"}]}


def said(entry: dict[str, Any]) -> str:
    """What a recorded press did, in one sentence built from the record."""
    if not entry["sent"]:
        return f"{entry['reply']}; the native executor is absent on this Valkey."
    moved = entry["changes"]
    if entry["unchanged"]:
        effect = "nothing changed (every key byte-for-byte as before)"
    else:
        effect = "changed: " + ", ".join(f"{c['name'].partition('}:')[2]} {c['kind']}" for c in moved)
    absent = " This Valkey has no EMQ module: the native executor is absent here." if entry["absent"] else ""
    return f"Valkey answered {entry['reply']}; {effect}.{absent}"


class Native(Widget):
    name = "native"
    title = "The native refusal"
    queue_parts = (("native",),)
    # The refusals first (the key state must not move), then the two that land.
    tour = ("native", "flat-form", "script", "flat-job")
    labels: ClassVar[dict[str, str]] = {
        "script": "Send as a script",
        "native": "Send as EMQ.COMPLETE",
        "flat-form": "Send the flat form",
        "flat-job": "Complete a flat job natively",
        "reset": "Reset",
    }

    def job_ids(self, queue: str) -> list[str]:
        return [PARENT, CHILD, FLAT]

    async def land(self, ctx: Context) -> None:
        queue = self.queues(ctx)[0]
        await flows.add(ctx.conn, queue, flow_spec())
        child = await jobs.claim(ctx.conn, queue)
        # A flat job has no add script: its row and its pending entry, in one
        # MULTI on the queue's slot, then the real claim.
        async with ctx.conn.pipeline(transaction=True) as pipe:
            row: Fields = {"state": "pending", "attempts": "0", "payload": "email the receipt"}
            pipe.hset(keyspace.job_key(queue, FLAT), mapping=row)
            pipe.zadd(keyspace.queue_key(queue, "pending"), {FLAT: 0})
            await pipe.execute()
        flat = await jobs.claim(ctx.conn, queue)
        executor = "present" if await module.loaded(ctx.conn) else "absent"
        await self.remember(ctx, child_token=str(child[1] if child else ""),
                            flat_token=str(flat[1] if flat else ""), executor=executor)

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        view = views[0]
        reading = flow.read_flow(view, PARENT, [(view, CHILD)])
        parent, child = reading.parent.as_json(), reading.children[0].as_json()
        flat_row = view.row(FLAT)
        flat: dict[str, Any] = {"id": FLAT, "state": flat_row.value.get("state") if flat_row else None,
                                "set": next(iter(view.sets_of(FLAT)), None)}
        last: dict[str, Any] | None = json.loads(state["last"]) if state.get("last") else None
        if last:
            readout = f"{self.label(last['action'])}: {said(last)}"
        else:
            readout = (f"Nothing sent yet. {CHILD} (token {state.get('child_token', '?')}) is {child['state']}; "
                       f"{reading.parent.fate()}; "
                       f"{FLAT} (token {state.get('flat_token', '?')}) is {flat['state']}.")
        if state.get("executor") == "absent" and not (last and last["absent"]):
            readout += " This Valkey has no EMQ module loaded: the native executor is absent here."
        picture = {"parent": parent, "child": child, "flat": flat, "executor": state.get("executor", ""), "last": last}
        return {"readout": readout, "picture": picture}

    # -- the four lines ------------------------------------------------------
    def child_call(self, ctx: Context, state: dict[str, str]) -> tuple[list[str], list[str]]:
        """The KEYS and ARGV `jobs.complete` sends for the child: a same-queue flow child."""
        queue = self.queues(ctx)[0]
        line = jobs.Lineage(mode="sq", parent=PARENT, parent_queue=queue)
        return jobs.complete_call(queue, CHILD, state.get("child_token", "1"), line, RESULT)

    async def press(self, ctx: Context, slug: str, parts: list[Any] | None,
                    script: tuple[list[str], list[str]] | None = None) -> Outcome:
        """Send one line between two readings of the queue; remember all of it."""
        queue = self.queues(ctx)[0]
        ids = self.job_ids(queue)
        before = await calls.key_state(ctx.conn, queue, ids)
        if script is not None:
            sent = await calls.send_script(ctx.conn, "complete", *script)
        else:
            assert parts is not None
            sent = await calls.send(ctx.conn, parts)
        after = await calls.key_state(ctx.conn, queue, ids)
        entry = calls.record(slug, sent, before, after)
        fields: dict[str, Any] = {"last": entry}
        if sent.absent:
            fields["executor"] = "absent"
        await self.remember(ctx, **fields)
        kind: OutcomeKind = "refused" if sent.error else "ok"
        return Outcome(f"{self.label(slug)}: {sent.line} → {said(entry)}", kind,
                       {"line": sent.line, "reply": sent.reply, "unchanged": entry["unchanged"]})

    @action("script")
    async def send_script(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        return await self.press(ctx, "script", None, self.child_call(ctx, await self.state(ctx)))

    @action("native")
    async def send_native(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        keys, args = self.child_call(ctx, await self.state(ctx))
        return await self.press(ctx, "native", ["EMQ.COMPLETE", len(keys), *keys, *args])

    @action("flat-form")
    async def send_flat_form(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        keys, args = self.child_call(ctx, await self.state(ctx))
        return await self.press(ctx, "flat-form", ["EMQ.COMPLETE", 2, *keys[:2], *args[:3]])

    @action("flat-job")
    async def complete_flat_job(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        state = await self.state(ctx)
        line = jobs.Lineage(mode="")
        keys, args = jobs.complete_call(queue, FLAT, state.get("flat_token", "1"), line)
        return await self.press(ctx, "flat-job", ["EMQ.COMPLETE", 2, *keys[:2], *args[:3]])
