"""The native refusal: one completion line, sent to two executors.

A same-queue flow (JOBparent held on JOBchild, claimed) and a flat job
(JOBflat, claimed). Each button sends one real line, and its effect is told by
the bytes (every key's DUMP and TTL). Without the EMQ module the native lines
meet "unknown command", and the widget says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from redis import exceptions as redis_errors
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from server.emq import flows, jobs, keyspace, registry
from server.emq.errors import EmqError
from server.emq.wire import Conn
from server.valkey import native as module
from server.valkey import reply as replies
from server.widgets import flow
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, reading
from server.widgets.flow import plural
from server.widgets.turn import Turn
from server.widgets.view import Kept, Moment, QueueView, shown

PARENT, CHILD, FLAT = "JOBparent", "JOBchild", "JOBflat"
RESULT = "packed"  # one word: the line reads as it was sent
ABSENT = "This Valkey has no EMQ module loaded: the native executor is absent here."
WHO = {"script": "The script", "native": "EMQ.COMPLETE", "flat-form": "EMQ.COMPLETE in its flat form",
       "flat-job": "EMQ.COMPLETE on the flat job"}
UNKNOWN = "unknown command"  # what Valkey says for a command no module added


@dataclass(frozen=True)
class Sent:
    line: str
    reply: str  # as valkey-cli prints it: (integer) 1, (error) EMQSTATE …
    error: bool = False
    absent: bool = False  # the server has no such command: no EMQ module there


async def send_line(conn: Conn, parts: Sequence[Any], send: Callable[[], Awaitable[Any]] | None = None) -> Sent:
    """Send a command line as it is (or by `send`: an EVALSHA line through its script,
    loaded where Valkey lacks it); every answer, an error too, is a reply."""
    line = " ".join(str(p) for p in parts)
    try:
        value = await (send() if send is not None else conn.execute_command(*parts))
    except (ResponseError, EmqError) as exc:
        text = f"(error) {replies.error_text(exc)}"
        return Sent(line, text, error=True, absent=UNKNOWN in text)
    except (redis_errors.ConnectionError, redis_errors.TimeoutError):
        raise  # Valkey away: the endpoint answers 503
    except (RedisError, RedisClusterException) as exc:
        if send is not None:
            raise  # a script is routed by its keys: what lands here is a fault, not a missing command
        # A cluster client routes a command by the keys the server reports for
        # it; for a command no node knows, it refuses to send the line at all.
        return Sent(line, f"(not sent) the cluster client says: {exc}", error=True, absent=True)
    return Sent(line, "\n".join(replies.lines(value)))


# Whether a press reached its milestone, from the reply's first line (`(integer) 1`, `(error) EMQSTATE …`),
# whether every key's bytes stayed as they were, and the queue after it.
Reached = Callable[[str, bool, QueueView], bool]


def refused_whole(first: str, unchanged: bool, after: QueueView) -> bool:
    """Refused with EMQSTATE and not one byte changed: the lesson's refusal."""
    return first.startswith("(error) EMQSTATE") and unchanged


class Flat(msgspec.Struct, kw_only=True):
    id: str
    state: str | None
    set: str | None


class Picture(msgspec.Struct, kw_only=True):
    parent: flow.ParentCard
    child: flow.ChildCard
    flat: Flat  # a job of no flow, claimed beside it
    executor: str  # "present" or "absent": the EMQ module's native executor
    last: Kept | None  # the last press: what it sent and what changed


class Native(Widget):
    name = "native"
    title = "The native refusal"
    design = Design(  # DESIGN.md's row
        "native", ("Send as a script", "Send as EMQ.COMPLETE", "Send the flat form", "Complete a flat job natively",
                   "Reset"))
    queue_parts = ("native",)
    rows = (PARENT, CHILD, FLAT)
    tour = (
        Step("refused", "EMQ.COMPLETE refused the flow layout; no key changed", (do("native"),)),
        Step("flat-refused", "The flat form refused once it read parent; no key changed", (do("flat-form"),)),
        Step("scripted", "The script completed the child and released the parent", (do("script"),)),
        Step("flat-native", "EMQ.COMPLETE completed a flat job", (do("flat-job"),)),
    )

    async def land(self, turn: Turn) -> None:
        queue = turn.queue()
        await flows.add(turn.conn, queue, flow.spec(PARENT, "ship the order", [CHILD], "pack the box"))
        child = await jobs.claim(turn.conn, queue)
        # a flat job has no add script: its row and its pending entry in one MULTI, then the real claim
        async with turn.conn.pipeline(transaction=True) as pipe:
            pipe.hset(keyspace.job_key(queue, FLAT), mapping={"state": "pending", "attempts": "0",
                                                              "payload": "email the receipt"})
            pipe.zadd(keyspace.queue_key(queue, "pending"), {FLAT: 0})
            await pipe.execute()
        flat = await jobs.claim(turn.conn, queue)
        # the workers' tokens, which each line carries as a worker would send it
        turn.remember(child_token=str(child[1] if child else 1), flat_token=str(flat[1] if flat else 1),
                      executor="present" if await module.loaded(turn.conn) else "absent")

    def describe(self, moment: Moment) -> Description:
        view, state = moment.first, moment.state
        reading_ = flow.read_flow(view, PARENT, [(view, CHILD)])
        child = reading_.children[0]
        # the flat job as the keys hold it, and the queue's completed count
        sets = ", ".join(view.sets_of(FLAT)) or "no state set"
        flat = f"{FLAT}: no row" if view.row(FLAT) is None else (
            f"{FLAT}: {view.fields(FLAT).get('state') or 'no state'}, in {sets}")
        metrics = view.get("metrics:completed")
        done = metrics.value.get("count") if metrics is not None and isinstance(metrics.value, dict) else None
        flat += f"; metrics:completed count = {done}" if done is not None else ""
        readout = f"{CHILD}: {child.where}; {reading_.parent.fate()}, {reading_.counter()}; {flat}."
        if state.get("executor") == "absent":
            readout += " " + ABSENT
        return Description(readout, Picture(
            parent=reading_.parent, child=child,
            flat=Flat(id=FLAT, state=view.fields(FLAT).get("state"), set=next(iter(view.sets_of(FLAT)), None)),
            executor=state.get("executor", ""), last=moment.kept("last")))

    @reading("keys-changed")
    def keys_changed(self, now: Moment, before: Moment) -> Value:
        return "yes" if now.all_keys() != before.all_keys() else "no"

    def child_call(self, turn: Turn) -> tuple[list[str], list[str]]:
        """The KEYS and ARGV `jobs.complete` sends for the child: a same-queue flow child."""
        queue = turn.queue()
        line = jobs.Lineage(mode="sq", parent=PARENT, parent_queue=queue)
        return jobs.complete_call(queue, CHILD, turn.moment.state.get("child_token") or "1", line, RESULT)

    async def press(self, turn: Turn, slug: str, parts: list[Any], milestone: str, reached: Reached,
                    send: Callable[[], Awaitable[Any]] | None = None) -> Outcome:
        """Send one line between two readings of the queue's bytes; remember all of it, and say it
        in one sentence: who answered what, and what moved (DUMP compared)."""
        before = turn.moment.first
        names = [k.name for k in before.keys]
        old = await turn.dumps(names)
        sent = await send_line(turn.conn, parts, send)
        after = (await turn.read()).first
        new = await turn.dumps(sorted({*names, *(k.name for k in after.keys)}))
        # each key whose bytes differ, as (name, new | gone | changed)
        named = [(shown(n, turn.sandbox), "new" if n not in old else "gone" if n not in new else "changed")
                 for n in sorted(set(old) | set(new)) if old.get(n) != new.get(n)]
        turn.remember(last={
            "action": slug, "line": shown(sent.line, turn.sandbox),
            "reply": shown(sent.reply, turn.sandbox), "error": sent.error, "absent": sent.absent,
            "before": msgspec.to_builtins([k.as_json() for k in before.keys]),
            "after": msgspec.to_builtins([k.as_json() for k in after.keys]),
            "changes": [{"name": n, "kind": k} for n, k in named], "unchanged": not named})
        if slug != "script":  # a native line tells whether this Valkey has the executor
            turn.remember(executor="absent" if sent.absent else "present")
        first = sent.reply.splitlines()[0] if sent.reply else ""
        effect = ("every key is byte-for-byte as before (DUMP compared)" if not named
                  else f"{plural(len(named), 'key')} changed (DUMP compared)")
        detail: dict[str, Value | list[str]] = {"reply": sent.reply, "unchanged": not named}
        if sent.absent:
            return Outcome(text=f"{WHO[slug]} met ERR unknown command: this Valkey has no EMQ module, so the "
                                f"native executor is absent; {effect}.", kind="refused", detail=detail)
        gloss = ", no such row" if first == "(integer) 0" else ""  # the scripts' and the module's 0
        return Outcome(text=f"{WHO[slug]} answered {first}{gloss}; {effect}.",
                       kind="refused" if sent.error else "ok",
                       reached=(milestone,) if reached(first, not named, after) else (), detail=detail)

    @action("script", "Send as a script")
    async def send_script(self, turn: Turn, body: Body) -> Outcome:
        keys, args = self.child_call(turn)
        script = registry.script("complete")
        return await self.press(turn, "script", ["EVALSHA", script.sha, len(keys), *keys, *args], "scripted",
                                lambda first, _, after: (first == "(integer) 1"
                                                         and after.fields(PARENT).get("state") == "pending"),
                                lambda: script.run(turn.conn, keys, args))

    @action("native", "Send as EMQ.COMPLETE")
    async def send_native(self, turn: Turn, body: Body) -> Outcome:
        keys, args = self.child_call(turn)
        return await self.press(turn, "native", ["EMQ.COMPLETE", len(keys), *keys, *args], "refused",
                                refused_whole)

    @action("flat-form", "Send the flat form")
    async def send_flat_form(self, turn: Turn, body: Body) -> Outcome:
        keys, args = self.child_call(turn)
        return await self.press(turn, "flat-form", ["EMQ.COMPLETE", 2, *keys[:2], *args[:3]], "flat-refused",
                                refused_whole)

    @action("flat-job", "Complete a flat job natively")
    async def complete_flat_job(self, turn: Turn, body: Body) -> Outcome:
        keys, args = jobs.complete_call(turn.queue(), FLAT, turn.moment.state.get("flat_token") or "1",
                                        jobs.Lineage(mode=""))
        return await self.press(turn, "flat-job", ["EMQ.COMPLETE", 2, *keys, *args], "flat-native",
                                lambda first, _, after: first == "(integer) 1" and after.row(FLAT) is None)
