"""What every widget is: a scenario on its own queues, actions, and a snapshot.

A widget never keeps state in the browser or in this process. Its keys live in
Valkey under the sandbox's queues; the little it must remember between clicks
(which move a stepper is on, the token of the last completion) lives in one
lab hash in the same hashtag. Every snapshot is read back from Valkey, and the
readout sentence is built from those values.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from server.widgets import snapshot
from server.sandboxes.sandbox import queue_name
from server.widgets.snapshot import QueueView


class BadInput(ValueError):
    """A request body a widget action cannot accept (answered with a 400)."""


@dataclass
class Outcome:
    """What one action did, in words (announced) and in data."""

    text: str
    kind: str = "ok"  # ok | refused | info
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "detail": self.detail}


ActionFn = Callable[[Any, "Context", dict[str, Any]], Awaitable[Outcome]]
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
        return f"lab:{{{self.queues(ctx)[0]}}}:state"

    async def state(self, ctx: Context) -> dict[str, str]:
        raw = await ctx.conn.hgetall(self.state_key(ctx))
        return {snapshot._text(k): snapshot._text(v) for k, v in raw.items()}

    async def remember(self, ctx: Context, **fields: Any) -> None:
        values = {k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()}
        await ctx.conn.hset(self.state_key(ctx), mapping=values)

    async def ensure_landed(self, ctx: Context) -> None:
        """Land the scenario the first time this widget shows in this sandbox."""
        key = self.state_key(ctx)
        # SET NX on the landed flag: two tabs opening at once land it once.
        if await ctx.conn.hsetnx(key, "landed", "1"):
            try:
                await self.land(ctx)
            except BaseException:
                # A half-landed scenario would stick; let the next show retry.
                await ctx.conn.hdel(key, "landed")
                raise

    async def clear(self, ctx: Context) -> None:
        """Remove every key of the widget's queues, its lab hash included."""
        for queue in self.queues(ctx):
            await snapshot.delete_queue(ctx.conn, queue)

    async def reset(self, ctx: Context) -> None:
        """Remove the widget's keys (lab hash included) and land its scenario again.

        The learner's choices named in `kept_on_reset` survive: Reset starts
        the scenario they picked over, it does not undo the pick.
        """
        kept = {}
        if self.kept_on_reset:
            state = await self.state(ctx)
            kept = {k: state[k] for k in self.kept_on_reset if k in state}
        await self.clear(ctx)
        await ctx.conn.hset(self.state_key(ctx), mapping={**kept, "landed": "1"})
        await self.land(ctx)

    async def snapshot(self, ctx: Context) -> dict[str, Any]:
        # The lab hash and every queue are read side by side: each is its own
        # slot, and waiting for one before asking for the next only adds latency.
        state, views = await asyncio.gather(
            self.state(ctx),
            asyncio.gather(*(snapshot.read_queue(ctx.conn, q, self.job_ids(q)) for q in self.queues(ctx))),
        )
        return self.compose(list(views), state)

    def compose(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        """The snapshot a page receives, from the keys and lab state just read."""
        return {
            "widget": self.name,
            # Counted here, from the keys just read, so the page shows numbers, not sums of its own.
            "key_count": sum(len(v.keys) for v in views),
            "queues": [v.as_json() for v in views],
            **self.describe(views, state),
        }

    async def perform(self, ctx: Context, slug: str, body: dict[str, Any]) -> Outcome:
        fn = self.actions[slug]
        return await fn(self, ctx, body)

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
        last = Outcome("the scenario as it lands.")
        for entry in self.tour[:step]:
            slug, body = self.tour_step(entry)
            last = await self.perform(ctx, slug, body)
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
        step = whole(body, "step", 0, len(self.tour))
        return await self.replay(ctx, step)

    @action("reset")
    async def reset_action(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        await self.reset(ctx)
        return Outcome("Reset: the starting scenario was landed again through the real scripts.")


def parent_fate(state: str | None, sets: list[str]) -> str:
    """What a flow's parent is doing, in the words every readout uses."""
    where = ", ".join(sets) or "no set"
    if state == "failed":
        return f"the parent is failed (state failed, in {where}): nothing will release it"
    if state == "awaiting_children":
        return "the parent stays held (awaiting_children), in no state set"
    if state in (None, "gone"):
        return "no parent row: press Reset to land the flow again"
    return f"the parent is released: state {state}, in {where}"


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


def choice(body: dict[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    value = body.get(name, default)
    if value not in options:
        raise BadInput(f"'{name}' must be one of: {', '.join(options)}")
    return str(value)
