"""What every widget is: a scenario on its own queues, actions, and a snapshot.

A widget never keeps state in the browser or in this process. Its keys live in
Valkey under the sandbox's queues; what it must remember between clicks (which
move a stepper is on, the learner's choices, the last outcome and who caused
it) lives in one lab hash in the same hashtag. Every snapshot carries all of
it, read back from Valkey, so every open page of a sandbox paints the same
thing, and the readout sentence is built from those values.

An action runs under the widget's lock, two round trips of its own besides
its work (`server/widgets/turn.py`); what it did is an `Outcome`
(`outcome.py`), its body is read by `inputs.py`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, ClassVar, TypeVar

from server.emq import pipeline
from server.emq.wire import Fields, as_dict
from server.valkey import scripts
from server.widgets import predict, snapshot, turn
from server.widgets.context import Context
from server.widgets.inputs import choice, flag, tour_step_of, whole
from server.widgets.outcome import BadInput, Busy, Outcome, Reading, Refusal, TooManyKeys, encoded, json_or_none
from server.widgets.snapshot import QueueView

__all__ = ["BadInput", "Busy", "Context", "Outcome", "Reading", "Refusal", "TooManyKeys", "Widget", "action",
           "choice", "flag", "tour_step_of", "whole"]

ActionFn = Callable[[Any, Context, dict[str, Any]], Awaitable[Outcome]]
# (widget, ctx, slug, body) -> the outcome: how `Widget.run` performs an action.
Performer = Callable[["Widget", Context, str, dict[str, Any]], Awaitable[Outcome]]
# A subclass's action takes its own class as `self`: keep its exact type.
A = TypeVar("A", bound=ActionFn)


def action(slug: str) -> Callable[[A], A]:
    """Mark a widget method as the action `POST /api/widgets/<widget>/<slug>`."""

    def mark(fn: A) -> A:
        fn.__widget_action__ = slug  # type: ignore[attr-defined]
        return fn

    return mark


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

    # -- the lab hash ----------------------------------------------------------
    def queues(self, ctx: Context) -> list[str]:
        return [ctx.queue(*parts) for parts in self.queue_parts]

    def state_key(self, ctx: Context) -> str:
        return snapshot.state_key(self.queues(ctx)[0])

    async def state(self, ctx: Context) -> dict[str, str]:
        """The lab hash: as the action's lock read it, while the action runs
        (its own `remember` keeps that copy true), else read now."""
        started = ctx.started(self.state_key(ctx))
        if started is not None:
            return dict(started)
        raw = await ctx.conn.hgetall(self.state_key(ctx))
        return as_dict(raw)

    async def remember(self, ctx: Context, **fields: Any) -> None:
        values = encoded(fields)
        mapping: Fields = {}
        mapping.update(values)
        await ctx.conn.hset(self.state_key(ctx), mapping=mapping)
        started = ctx.started(self.state_key(ctx))
        if started is not None:
            started.update(values)

    # -- one action at a time (server/widgets/turn.py) ---------------------------
    async def begin(self, ctx: Context, key_cap: int | None) -> str:
        return await turn.begin(self, ctx, key_cap)

    async def release(self, ctx: Context, token: str) -> None:
        await turn.release(self, ctx, token)

    async def run(self, ctx: Context, slug: str, body: dict[str, Any], key_cap: int | None = None,
                  perform: Performer | None = None) -> tuple[Outcome, dict[str, Any]]:
        """One action, start to finish. `perform` stands in for `self.perform`
        under the lock (the API's is `attempt.run`: the learner's prediction
        judged, the tour step counted)."""
        return await turn.run(self, ctx, slug, body, key_cap, perform)

    async def ids_after(self, ctx: Context) -> dict[str, list[str]]:
        """Per queue, the job ids whose rows the action's closing read looks
        for (a held parent is in no state set, so it must be named)."""
        return {queue: self.job_ids(queue) for queue in self.queues(ctx)}

    async def land_afresh(self, ctx: Context) -> None:
        """Land the scenario over whatever a half-finished landing left (the
        site killed mid-land): clear the queues first, keep nothing."""
        await self.clear(ctx)
        await self.land(ctx)
        await self.remember(ctx, landed="1")

    async def show(self, ctx: Context) -> dict[str, Any]:
        """The snapshot a page opens with: one read, and the landing the first
        time the widget shows in this sandbox (under the lock, so two tabs
        opening at once land it once)."""
        snap = await self.snapshot(ctx)
        if snap["landed"]:
            return snap
        token = await self.begin(ctx, None)
        ctx.start = ctx.start_state = None
        return await turn.finish(self, ctx, token, "")

    async def clear(self, ctx: Context, fresh: Fields | None = None) -> None:
        """Remove every key of the widget's queues, lab hash included (not the
        lock); `fresh`: the lab hash written anew in the same round trip."""
        # every id the widget may hold now (a learner's own batch, for the ledger), read before it goes
        ids = await self.ids_after(ctx)
        if ctx.started(self.state_key(ctx)) is not None:
            ctx.start = ctx.start_state = None  # what the lock read is gone with the keys
        await snapshot.delete_queues(ctx.conn, {q: ids[q] for q in self.queues(ctx)},
                                     (self.state_key(ctx), fresh) if fresh else None)

    async def reset(self, ctx: Context, *, last: bool = False) -> None:
        """Remove the widget's keys (lab hash included) and land its scenario again.

        The learner's choices named in `kept_on_reset` survive: Reset starts
        the scenario they picked over, it does not undo the pick. Callers hold
        the widget's lock (`run`, or `reset_locked`). `last`: nothing in this
        action reads the keys before its finish, so the land may leave its
        trailing writes to the finish's round trip (`Context.land_tail`), or
        the whole land, with its proof, to the closing (`closing.py`).
        """
        ctx.start = ctx.start_state = None
        if ctx.cleared:
            ctx.cleared = False  # the lock's own call removed the keys and kept the choices (`turn.begin`)
        else:
            kept = {}
            if self.kept_on_reset:
                state = await self.state(ctx)
                kept = {k: state[k] for k in self.kept_on_reset if k in state}
            fresh: Fields = {"landed": "1"}
            fresh.update(kept)
            await self.clear(ctx, fresh)
        ctx.land_tail = ctx.tail if last else None
        try:
            await self.land(ctx)
        finally:
            ctx.land_tail = None

    async def reset_locked(self, ctx: Context, outcome: Outcome) -> None:
        """Reset from outside an action (an instructor's reset): the Reset
        button's own turn (`turn.run`: its lock, its round trips), recording
        `outcome` as said by nobody's page."""
        ctx.tab = ""

        async def instructors(widget: Widget, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
            await widget.reset(ctx, last=True)
            return outcome

        await turn.run(self, ctx, "reset", {}, None, instructors)

    # -- the snapshot ------------------------------------------------------------
    def offers_answer(self) -> bool:
        """An action's answer may stand for the stream's read of the same
        change (server/live/answers.py): the widget has one queue, and its
        snapshot is this class's one read of the ids `ids_after` names too."""
        cls = type(self)
        return len(self.queue_parts) == 1 and cls.snapshot is Widget.snapshot and cls.ids_after is Widget.ids_after

    async def snapshot(self, ctx: Context) -> dict[str, Any]:
        """Every queue and the lab state, read in one round trip."""
        return self.decode(ctx, await self._read_all(ctx))

    async def views(self, ctx: Context, ids: dict[str, list[str]] | None = None) -> list[QueueView]:
        """Every queue's keys, read in one round trip (no lab state); `ids`:
        per queue, the job ids to look for (default: `job_ids`)."""
        queues = self.queues(ctx)
        replies = await self._read_all(ctx, ids)
        return [snapshot.decode(ctx.conn, q, r)[1] for q, r in zip(queues, replies, strict=True)]

    async def _read_all(self, ctx: Context, ids: dict[str, list[str]] | None = None) -> list[Any]:
        before, ctx.before = ctx.before, []  # the page's activity record: in this round trip
        reads = [snapshot.call(q, ids[q] if ids else self.job_ids(q)) for q in self.queues(ctx)]
        calls: list[scripts.Call | None] = [None] * len(before)
        calls += reads
        async with ctx.conn.pipeline(transaction=False) as pipe:
            for command in before:
                pipe.execute_command(*command)
            for script, keys, args in reads:
                script.queue(pipe, keys, args)
            return (await scripts.execute(ctx.conn, pipe, calls))[len(before):]

    def decode(self, ctx: Context, replies: list[Any]) -> dict[str, Any]:
        decoded = [snapshot.decode(ctx.conn, q, r) for q, r in zip(self.queues(ctx), replies, strict=True)]
        return self.compose([view for _, view in decoded], decoded[0][0])

    async def read_views(self, ctx: Context, state: dict[str, str]) -> list[QueueView]:
        """The widget's queues as its snapshot reads them (predictions measure
        these; a widget whose picture depends on its lab state overrides it)."""
        return await self.views(ctx)

    def compose(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        """The snapshot a page receives, from the keys and lab state just read."""
        return {
            "widget": self.name,
            # The lab state's version (the server's clock at the widget's last
            # action): a page never paints an older snapshot over a newer one.
            "ver": int(state.get("ver") or 0),
            # Counted here, from the keys just read, so the page shows numbers, not sums of its own.
            "key_count": sum(len(v.keys) for v in views),
            "queues": [v.as_json() for v in views],
            "outcome": json_or_none(state.get("outcome")),
            "landed": state.get("landed") == "1",
            **self.describe(views, state),
            # The question open now, from the keys just read: every tab asks the same.
            "question": predict.offered(self.questions, views, state),
        }

    # -- performing ----------------------------------------------------------------
    async def perform(self, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
        fn = self.actions[slug]
        try:
            return await fn(self, ctx, body)
        finally:
            ctx.start = ctx.start_state = None  # stale once the action has written

    async def perform_and_keep(self, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
        """`perform`, then what it left for the last round trip (its kept
        fields, its deferred commands, its readings) done at once: one step of
        a replay or a trace, before the next step reads them."""
        ctx.closing = None  # the next step reads what this one wrote
        outcome = await self.perform(ctx, slug, body)
        if outcome.keep:
            await self.remember(ctx, **outcome.keep)
            outcome.keep = {}
        tail, ctx.tail = ctx.tail, []
        await pipeline.send(ctx.conn, tail)  # one round trip, not one per command
        await turn.word(ctx, self.queues(ctx)[0], outcome)
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
        await self.reset(ctx, last=True)
        return Outcome("Reset: the starting scenario was landed again through the real scripts.")
