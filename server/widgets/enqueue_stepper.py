"""The @enqueue_flow stepper: the real script, run one move further each click.

The moves are the script's own marker comments (`-- @move N: …`). Move N is
shown by clearing the stepper's queue and running the script from its top to
the end of move N (a prefix of the very file the server runs, registered and
run by SHA), so the keys on the page are what Valkey holds after those lines.
The stepper has a queue of its own: its partial states exist only here and no
other widget can claim them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from server.emq import flows, registry
from server.emq.errors import EmqError
from server.widgets import snapshot
from server.widgets.base import BadInput, Context, Outcome, Widget, action, flag, tour_step_of
from server.widgets.flow import plural
from server.widgets.snapshot import QueueView

SCRIPT = "enqueue_flow"
PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2")
NON_JOB_CHILD = "child2"  # well-formed, so it passes the host gate; the script's kind law refuses it


def flow_spec(non_job: bool) -> dict[str, Any]:
    ids = (CHILDREN[0], NON_JOB_CHILD) if non_job else CHILDREN
    return {
        "parent": {"id": PARENT, "payload": "ship the order"},
        "children": [{"id": c, "payload": f"step {i}"} for i, c in enumerate(ids, 1)],
    }


def job_status(view: QueueView, job_id: str) -> dict[str, Any]:
    """One job as the keys just read hold it: its row's state, its sets, its counter."""
    row = view.row(job_id)
    deps = view.row(job_id, ":dependencies")
    return {
        "id": job_id,
        "state": row.value.get("state") if row else None,
        "dependencies": int(deps.value) if deps else None,
        "sets": view.sets_of(job_id),
    }


class EnqueueStepper(Widget):
    name = "enqueue-stepper"
    title = "The @enqueue_flow transition"
    queue_parts = (("stepper",),)
    script = SCRIPT
    # One step per move of the script, then the kind law: the same flow with a
    # non-JOB child, run atomically, is refused before the first write.
    tour = (
        *(("next",) * len(registry.moves(SCRIPT))),
        ("non-job", {"non_job": True}),
        "run-atomically",
    )
    labels: ClassVar[dict[str, str]] = {
              "next": "Next move", "previous": "Previous move", "run-atomically": "Run atomically",
              "non-job": "Use a non-JOB id", "reset": "Reset"}

    def job_ids(self, queue: str) -> list[str]:
        return [PARENT, *CHILDREN, NON_JOB_CHILD]

    def moves(self) -> list[registry.Move]:
        return registry.moves(SCRIPT)

    async def land(self, ctx: Context) -> None:
        # The stepper starts before move 1: an empty queue.
        await self.remember(ctx, move="0", non_job="0", refused="")

    async def run_to(self, ctx: Context, move: int) -> Outcome:
        """Clear the queue, then run the script's prefix through move `move`."""
        total = len(self.moves())
        state = await self.state(ctx)
        non_job = state.get("non_job") == "1"
        queue = self.queues(ctx)[0]
        await self.clear(ctx)
        await self.remember(ctx, landed="1", move=str(move), non_job="1" if non_job else "0",
                            refused="", refused_at="")
        if move == 0:
            return Outcome("Back before move 1: the queue is empty.")
        keys, argv = flows.enqueue_flow_call(queue, flow_spec(non_job))
        try:
            if move >= total:
                await registry.run(ctx.conn, SCRIPT, keys, argv)
            else:
                await registry.run_prefix(ctx.conn, SCRIPT, move, keys, argv)
        except EmqError as exc:
            return await self.refused(ctx, exc, keys, argv)
        title = self.moves()[move - 1].title
        count = await self.key_count(ctx)
        return Outcome(f"Move {move} of {total}, {title}: "
                       f"Valkey now holds {plural(count, 'key')} in the stepper's queue.")

    async def refused(self, ctx: Context, exc: EmqError, keys: list[str], argv: list[str]) -> Outcome:
        """Where the script refused: the first move whose prefix refuses the same
        way, found by running the prefixes on Valkey (the gate is move 1, and a
        refused prefix writes nothing, so this costs a round trip or two)."""
        at = len(self.moves())
        # the learner's choice, as run_to just kept it: the clears below take the lab hash with them
        non_job = (await self.state(ctx)).get("non_job", "0")
        for n in range(1, at):
            try:
                await registry.run_prefix(ctx.conn, SCRIPT, n, keys, argv)
            except EmqError:
                at = n
                break
            finally:
                await self.clear(ctx)
        count = await self.key_count(ctx)
        title = self.moves()[at - 1].title
        # nothing ran past the refusal: no move is done
        await self.remember(ctx, landed="1", move="0", non_job=non_job, refused=str(exc), refused_at=str(at))
        return Outcome(
            f"The script refused in move {at} ({title}) with {exc}, before its first write: "
            f"{plural(count, 'key')} in the stepper's queue.",
            "refused", {"error": str(exc), "keys": count, "refused_at": at},
        )

    async def key_count(self, ctx: Context) -> int:
        view = await snapshot.read_queue(ctx.conn, self.queues(ctx)[0], self.job_ids(""))
        return len(view.keys)

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        moves = self.moves()
        move = int(state.get("move") or 0)
        view = views[0]
        refused = state.get("refused") or ""
        refused_at = int(state.get("refused_at") or 0)
        second = NON_JOB_CHILD if state.get("non_job") == "1" else CHILDREN[1]
        if refused:
            readout = (f"Refused in move {refused_at} ({moves[refused_at - 1].title}): {refused}. "
                       f"Nothing was written: {plural(len(view.keys), 'key')} in this queue.")
        elif move == 0:
            readout = f"Before move 1: {plural(len(view.keys), 'key')} in this queue."
        else:
            readout = (
                f"After move {move} of {len(moves)} ({moves[move - 1].title}): "
                f"{plural(len(view.keys), 'key')} in this queue."
            )
        return {
            "readout": readout,
            "picture": {
                "move": move,
                "total": len(moves),
                "moves": [{"number": m.number, "title": m.title} for m in moves],
                "non_job": state.get("non_job") == "1",
                "refused": refused,
                "refused_at": refused_at,
                "parent": job_status(view, PARENT),
                "children": [job_status(view, c) for c in (CHILDREN[0], second)],
            },
        }

    @action("next")
    async def next_move(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        move = int(state.get("move") or 0)
        if state.get("refused"):
            return Outcome("The script already refused at the gate; nothing further runs. Untick the box or Reset.",
                           "info")
        if move >= len(self.moves()):
            return Outcome("The script has run to its end. Press Previous move or Reset.", "info")
        return await self.run_to(ctx, move + 1)

    @action("previous")
    async def previous_move(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        state = await self.state(ctx)
        move = int(state.get("move") or 0)
        return await self.run_to(ctx, max(0, move - 1))

    @action("goto")
    async def goto(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """`#step=N`: move N is cheaper to rebuild natively than by replaying N
        clicks (clear, then run the script's prefix through move N), and the
        same. Past the moves, the tour's refusal is replayed click by click."""
        step, note = tour_step_of(body, len(self.tour))
        if step > len(self.moves()):
            # Past the moves the tour presses other buttons: name the button,
            # not a step number, so the sentence after it owns the numbering.
            await self.replay(ctx, step - 1)
            slug, args = self.tour_step(self.tour[step - 1])
            last = await self.perform_and_keep(ctx, slug, args)
            return replace(last, text=f"{note}Rebuilt on Valkey from the link, up to “{self.label(slug)}”. {last.text}")
        await self.remember(ctx, non_job="0")
        outcome = await self.run_to(ctx, step)
        # Up to the last move a tour step is a move: one numbering, the script's.
        return replace(outcome, text=f"Rebuilt on Valkey from the link. {outcome.text}")

    @action("run-atomically")
    async def run_atomically(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        outcome = await self.run_to(ctx, len(self.moves()))
        if outcome.kind == "refused":
            return outcome
        count = plural(await self.key_count(ctx), "key")
        return replace(outcome,
                       text=f"The whole script ran as one call: Valkey now holds {count} in the stepper's queue.")

    @action("non-job")
    async def non_job(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        if "non_job" not in body:
            raise BadInput("'non_job' is required: true or false")
        on = flag(body, "non_job")
        await self.remember(ctx, non_job="1" if on else "0")
        outcome = await self.run_to(ctx, 0)
        which = (f"The second child is now {NON_JOB_CHILD!r}, not JOB-prefixed" if on
                 else "Every id is JOB-prefixed again")
        return Outcome(f"{which}; the stepper is back before move 1.", detail=outcome.detail)
