"""What every widget is: a scenario on its own queues, actions, and a snapshot.

A widget never keeps state in the browser or in this process. Its keys live in
Valkey under the sandbox's queues; what it must remember between clicks (which
move a stepper is on, the learner's choices, the last outcome and who caused
it) lives in one lab hash in the same hashtag. Every snapshot carries all of
it, read back from Valkey, so every open page of a sandbox paints the same
thing, and the readout sentence is built from those values.

One action runs at a time per widget and sandbox (`queue_keys.lua`, mode `begin`, takes a lock
with a lease): tabs, class members and Reset queue behind it, so any
interleaving of clicks leaves a state that clicking one at a time reaches.
An action ends in one round trip that records its outcome, releases the lock
and reads the snapshot (`queue_keys.lua`, mode `finish`).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from server.sandboxes.sandbox import queue_name
from server.valkey import scripts
from server.valkey.scripts import SiteScript
from server.widgets import predict, snapshot
from server.widgets.snapshot import QueueView

SCRIPTS = Path(__file__).resolve().parent / "scripts"
RELEASE = SiteScript(SCRIPTS / "release.lua")
LOCK_LEASE_MS = 10_000  # an action that outlives this (a site killed mid-action) lets go
LOCK_WAIT_S = 5.0  # how long an action queues behind another before it gives up


class BadInput(ValueError):
    """A request body a widget action cannot accept (answered with a 400)."""


class Busy(Exception):
    """Another action of this widget held the lock for too long (answered with a 503)."""


class TooManyKeys(Exception):
    """The widget's queues hold more keys than its cap (answered with a 409)."""


class Refusal(Exception):
    """An action the scenario cannot take now (a cap reached, no cluster):
    nothing was written; answered with a 409 and this sentence."""


@dataclass
class Outcome:
    """What one action did, in words (announced) and in data."""

    text: str
    kind: str = "ok"  # ok | refused | info
    detail: dict[str, Any] = field(default_factory=dict)
    # Lab-state fields the action wants kept, written with the outcome in the
    # action's last round trip (instead of a `remember` round trip of its own).
    keep: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "detail": self.detail}


ActionFn = Callable[[Any, "Context", dict[str, Any]], Awaitable[Outcome]]
# (widget, ctx, slug, body) -> the outcome: how `Widget.run` performs an action.
Performer = Callable[["Widget", "Context", str, dict[str, Any]], Awaitable[Outcome]]
# A subclass's action takes its own class as `self`: keep its exact type.
A = TypeVar("A", bound=ActionFn)


def action(slug: str) -> Callable[[A], A]:
    """Mark a widget method as the action `POST /api/widgets/<widget>/<slug>`."""

    def mark(fn: A) -> A:
        fn.__widget_action__ = slug  # type: ignore[attr-defined]
        return fn

    return mark


@dataclass
class Context:
    """One widget acting in one sandbox."""

    conn: Any
    sandbox: str
    # Who acts ("learner" or "instructor") and from which page (a tab id the
    # page makes up): the outcome says so on every page that shows it.
    by: str = "learner"
    tab: str = ""
    # Best-effort commands an action leaves for its last round trip (e.g. the
    # DEL of a completed job's :logs), queued with the outcome and snapshot.
    tail: list[tuple[Any, ...]] = field(default_factory=list)
    # The learner's progress fields for this widget, when the way in read them
    # already (`server/web/entry.py`); None: the action reads them itself.
    held: list[Any] | None = None
    # The widget's first queue as the lock found it: an action may read it
    # once instead of reading the queue again (`take_start`).
    start: QueueView | None = None

    def take_start(self) -> QueueView | None:
        """The keys as the action's lock found them, once (the action's own
        writes make them stale)."""
        view, self.start = self.start, None
        return view

    def queue(self, *parts: str) -> str:
        return queue_name(self.sandbox, *parts)


class Widget:
    name: ClassVar[str]
    title: ClassVar[str]
    # Queue parts under the sandbox, e.g. ("fanin",) -> "<sandbox>.fanin".
    queue_parts: ClassVar[tuple[tuple[str, ...], ...]]
    actions: ClassVar[dict[str, ActionFn]]
    # The widget's canonical walk-through, one action per step: what
    # `#<widget>-step=N` replays (through `goto`) and what the static trace
    # records. A step is an action slug, or (slug, body) for an action that
    # takes a body.
    tour: ClassVar[tuple[str | tuple[str, dict[str, Any]], ...]] = ()
    # What the static trace records, when it should show more than the tour
    # (e.g. both arms of a choice); None: the tour itself.
    trace_tour: ClassVar[tuple[str | tuple[str, dict[str, Any]], ...] | None] = None
    # Lab-hash fields that are the learner's choices, kept across Reset.
    kept_on_reset: ClassVar[tuple[str, ...]] = ()
    # Each action's visible button label, for the trace and the outcome
    # sentences ("Step 2 of 4, Complete child: …").
    labels: ClassVar[dict[str, str]] = {}
    # What the widget asks before the steps where its lesson turns
    # (server/widgets/questions.py, handed out by the registry).
    questions: tuple[predict.Question, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, ActionFn] = {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                slug = getattr(value, "__widget_action__", None)
                if slug:
                    found[slug] = value
        cls.actions = found

    # -- what subclasses provide -------------------------------------------
    def job_ids(self, queue: str) -> list[str]:
        """Ids the scenario lands on `queue` (rows shown even when off every set)."""
        return []

    async def land(self, ctx: Context) -> None:
        """Land the starting scenario through the real scripts."""

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        """The picture and readout, derived from the keys just read."""
        return {"readout": ""}

    # -- shared machinery ----------------------------------------------------
    def queues(self, ctx: Context) -> list[str]:
        return [ctx.queue(*parts) for parts in self.queue_parts]

    def state_key(self, ctx: Context) -> str:
        return snapshot.state_key(self.queues(ctx)[0])

    async def state(self, ctx: Context) -> dict[str, str]:
        raw = await ctx.conn.hgetall(self.state_key(ctx))
        return {snapshot._text(k): snapshot._text(v) for k, v in raw.items()}

    async def remember(self, ctx: Context, **fields: Any) -> None:
        await ctx.conn.hset(self.state_key(ctx), mapping=_encoded(fields))

    # -- one action at a time --------------------------------------------------
    async def begin(self, ctx: Context, key_cap: int | None) -> str:
        """Take the widget's lock (waiting behind another action); land the
        scenario if it has not landed whole. Returns the lock token."""
        first = self.queues(ctx)[0]
        token = secrets.token_hex(8)
        script, keys, args = snapshot.call(first, self.job_ids(first), "begin", token, str(LOCK_LEASE_MS))
        deadline = asyncio.get_running_loop().time() + LOCK_WAIT_S
        while True:
            reply = await script.run(ctx.conn, keys, args)
            if len(reply) > 1:
                break
            if asyncio.get_running_loop().time() > deadline:
                raise Busy("another action on this widget is still running; try again in a moment")
            await asyncio.sleep(0.005)
        state, view = snapshot.decode(ctx.conn, first, reply)
        try:
            if state.get("landed") != "1":
                await self.land_afresh(ctx)
            elif key_cap is not None and int(state.get("keys") or 0) > key_cap:
                raise TooManyKeys(f"this widget holds {state['keys']} keys, more than its cap of {key_cap}: "
                                  "press Reset")
            else:
                # the keys the action starts from, read with the lock (see `Context.start`)
                ctx.start = view
        except BaseException:
            await self.release(ctx, token)
            raise
        return token

    async def release(self, ctx: Context, token: str) -> None:
        """Let go of the lock without recording anything (an action that failed)."""
        await RELEASE.run(ctx.conn, [snapshot.lock_key(self.queues(ctx)[0])], [token])

    async def land_afresh(self, ctx: Context) -> None:
        """Land the scenario over whatever a half-finished landing left (the
        site killed mid-land): clear the queues first, keep nothing."""
        await self.clear(ctx)
        await self.land(ctx)
        await self.remember(ctx, landed="1")

    async def run(self, ctx: Context, slug: str, body: dict[str, Any], key_cap: int | None = None,
                  perform: Performer | None = None) -> tuple[Outcome, dict[str, Any]]:
        """One action, start to finish: lock, land if needed, act, then record
        the outcome, release the lock and read the snapshot in one round trip.
        `perform` stands in for `self.perform` under the lock (the API's is
        `attempt.run`: the learner's prediction judged, the tour step counted)."""
        token = await self.begin(ctx, None if slug == "reset" else key_cap)
        try:
            outcome = await (perform(self, ctx, slug, body) if perform else self.perform(ctx, slug, body))
        except BaseException:
            await self.release(ctx, token)
            raise
        record = {**outcome.as_json(), "action": slug, "label": self.label(slug), "by": ctx.by, "tab": ctx.tab}
        return outcome, await self.finish(ctx, token, json.dumps(record), outcome.keep)

    async def finish(self, ctx: Context, token: str, outcome: str, keep: dict[str, Any]) -> dict[str, Any]:
        queues = self.queues(ctx)
        calls: list[Any] = []
        async with ctx.conn.pipeline(transaction=False) as pipe:
            for command in ctx.tail:
                pipe.execute_command(*command)
                calls.append(None)
            ctx.tail.clear()
            fields = json.dumps(_encoded(keep)) if keep else ""
            ids = await self.ids_after(ctx)
            for i, queue in enumerate(queues):
                call = (snapshot.call(queue, ids[queue], "finish", token, outcome, fields)
                        if i == 0 else snapshot.call(queue, ids[queue]))
                call[0].queue(pipe, call[1], call[2])
                calls.append(call)
            replies = await scripts.execute(ctx.conn, pipe, calls)
        return self.decode(ctx, replies[len(replies) - len(queues):])

    async def ids_after(self, ctx: Context) -> dict[str, list[str]]:
        """Per queue, the job ids whose rows the action's closing read looks
        for (a held parent is in no state set, so it must be named)."""
        return {queue: self.job_ids(queue) for queue in self.queues(ctx)}

    async def ensure_landed(self, ctx: Context) -> None:
        """Land the scenario the first time this widget shows in this sandbox."""
        if (await self.state(ctx)).get("landed") != "1":
            await self.release(ctx, await self.begin(ctx, None))

    async def show(self, ctx: Context) -> dict[str, Any]:
        """The snapshot a page opens with: one read, and the landing the first
        time the widget shows in this sandbox (under the lock, so two tabs
        opening at once land it once)."""
        snap = await self.snapshot(ctx)
        if snap["landed"]:
            return snap
        token = await self.begin(ctx, None)
        return await self.finish(ctx, token, "", {})

    async def clear(self, ctx: Context) -> None:
        """Remove every key of the widget's queues, its lab hash included (the lock stays)."""
        await asyncio.gather(*(snapshot.delete_queue(ctx.conn, q, self.job_ids(q)) for q in self.queues(ctx)))

    async def reset(self, ctx: Context) -> None:
        """Remove the widget's keys (lab hash included) and land its scenario again.

        The learner's choices named in `kept_on_reset` survive: Reset starts
        the scenario they picked over, it does not undo the pick. Callers hold
        the widget's lock (`run`, or `reset_locked`).
        """
        kept = {}
        if self.kept_on_reset:
            state = await self.state(ctx)
            kept = {k: state[k] for k in self.kept_on_reset if k in state}
        await self.clear(ctx)
        await ctx.conn.hset(self.state_key(ctx), mapping={**kept, "landed": "1"})
        await self.land(ctx)

    async def reset_locked(self, ctx: Context, outcome: Outcome | None = None) -> None:
        """Reset from outside an action (an instructor's reset): the same lock."""
        token = await self.begin(ctx, None)
        try:
            await self.reset(ctx)
        except BaseException:
            await self.release(ctx, token)
            raise
        record = json.dumps({**outcome.as_json(), "action": "reset", "label": "Reset", "by": ctx.by, "tab": ""}) if outcome else ""
        await self.finish(ctx, token, record, {})

    async def snapshot(self, ctx: Context) -> dict[str, Any]:
        """Every queue and the lab state, read in one round trip."""
        queues = self.queues(ctx)
        calls = [snapshot.call(q, self.job_ids(q)) for q in queues]
        async with ctx.conn.pipeline(transaction=False) as pipe:
            for script, keys, args in calls:
                script.queue(pipe, keys, args)
            replies = await scripts.execute(ctx.conn, pipe, calls)
        return self.decode(ctx, replies)

    def decode(self, ctx: Context, replies: list[Any]) -> dict[str, Any]:
        decoded = [snapshot.decode(ctx.conn, q, r) for q, r in zip(self.queues(ctx), replies)]
        return self.compose([view for _, view in decoded], decoded[0][0])

    async def read_views(self, ctx: Context, state: dict[str, str]) -> list[QueueView]:
        """The widget's queues as its snapshot reads them (predictions measure these)."""
        return list(await asyncio.gather(*(snapshot.read_queue(ctx.conn, q, self.job_ids(q)) for q in self.queues(ctx))))

    def compose(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        """The snapshot a page receives, from the keys and lab state just read."""
        outcome = _json_or_none(state.get("outcome"))
        return {
            "widget": self.name,
            # The lab state's version (the server's clock at the widget's last
            # action): a page never paints an older snapshot over a newer one.
            "ver": int(state.get("ver") or 0),
            # Counted here, from the keys just read, so the page shows numbers, not sums of its own.
            "key_count": sum(len(v.keys) for v in views),
            "queues": [v.as_json() for v in views],
            "outcome": outcome,
            "landed": state.get("landed") == "1",
            **self.describe(views, state),
            # The question open now, from the keys just read: every tab asks the same.
            "question": predict.offered(self.questions, views, state),
        }

    async def perform(self, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
        fn = self.actions[slug]
        try:
            return await fn(self, ctx, body)
        finally:
            ctx.start = None  # stale once the action has written

    async def perform_and_keep(self, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
        """`perform`, then what it left for the last round trip (its kept
        fields, its deferred commands) written at once: one step of a replay
        or a trace, before the next step reads them."""
        outcome = await self.perform(ctx, slug, body)
        if outcome.keep:
            await self.remember(ctx, **outcome.keep)
            outcome.keep = {}
        for command in ctx.tail:
            await ctx.conn.execute_command(*command)
        ctx.tail.clear()
        return outcome

    # -- the tour: deep links and static traces ---------------------------------
    @staticmethod
    def tour_step(step: str | tuple[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        """A tour entry as (slug, body)."""
        return (step, {}) if isinstance(step, str) else (step[0], dict(step[1]))

    def label(self, slug: str) -> str:
        return self.labels.get(slug, slug.replace("-", " ").capitalize())

    async def replay(self, ctx: Context, step: int) -> Outcome:
        """Land afresh, then run the first `step` actions of the tour on Valkey."""
        await self.reset(ctx)
        last = Outcome("The scenario as it lands.")
        for entry in self.tour[:step]:
            slug, body = self.tour_step(entry)
            last = await self.perform_and_keep(ctx, slug, body)
        if step == 0:
            return Outcome(f"Step 0 of {len(self.tour)}, replayed on Valkey: the scenario as it lands.")
        slug, _ = self.tour_step(self.tour[step - 1])
        return Outcome(
            f"Step {step} of {len(self.tour)} ({self.label(slug)}), replayed on Valkey. {last.text}",
            last.kind, last.detail,
        )

    @action("goto")
    async def goto(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """`#<widget>-step=N` (or `#step=N` for a page's first widget): the tour to step N.

        The body is {"step": N}, 0 <= N <= len(tour); a bad body is refused
        before anything is written. Widgets with a cheaper native replay
        override this and keep the same body.
        """
        step, note = tour_step_of(body, len(self.tour))
        outcome = await self.replay(ctx, step)
        return replace(outcome, text=note + outcome.text)

    @action("reset")
    async def reset_action(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        await self.reset(ctx)
        return Outcome("Reset: the starting scenario was landed again through the real scripts.")


def _encoded(fields: dict[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()}


def _json_or_none(raw: str | None) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def flag(body: dict[str, Any], name: str, default: bool = False) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise BadInput(f"'{name}' must be true or false")
    return value


def whole(body: dict[str, Any], name: str, low: int, high: int) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadInput(f"'{name}' must be a whole number from {low} to {high}")
    return value


def tour_step_of(body: dict[str, Any], total: int) -> tuple[int, str]:
    """The step a deep link asks for, and a sentence when it asked past the end.

    A link to step 7 of a 6-step tour is not an error a learner can fix: it
    opens the last step and says so. Anything but a whole number >= 0 is refused.
    """
    step = whole(body, "step", 0, 10**6)
    if step <= total:
        return step, ""
    return total, f"This tour has {total} steps, so the link to step {step} opened the last one. "


def choice(body: dict[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    value = body.get(name, default)
    if value not in options:
        raise BadInput(f"'{name}' must be one of: {', '.join(options)}")
    return str(value)
