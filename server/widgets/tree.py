"""The tree: a flow whose child has children of its own, walked node by node.

`flows.add` walks a tree on the host, parent first and depth first: hold the
root, hold the inner node as a child of the root (it carries `parent`) and as
a parent of its own leaves, land each leaf. "Next node" lands one node of that
very walk (`flows.walk_order` + `flows.land_node`, the steps `add` takes), so
each node can be watched landing; "Walk the whole tree" runs `flows.add` in
one call. "Complete the deepest level" claims and completes every pending job
of the deepest level that has one: the leaves release the inner node into
pending, and the inner node's own completion then counts towards the root.
"""

from __future__ import annotations

from typing import Any, ClassVar

from server.emq import flows, jobs, keyspace
from server.emq.shape import parse_flow
from server.emq.wire import text
from server.widgets import flow, snapshot
from server.widgets.base import Context, Outcome, Reading, Widget, action, tour_step_of
from server.widgets.snapshot import QueueView

ROOT, INNER, TWIG = "JOBtree", "JOBbranch", "JOBtwig"
LEAVES = ("JOBleaf1", "JOBleaf2")
# How deep each job sits: the root is level 0 and is never claimed here.
LEVEL = {INNER: 1, TWIG: 1, LEAVES[0]: 2, LEAVES[1]: 2}
PARENT_OF = {INNER: ROOT, TWIG: ROOT, LEAVES[0]: INNER, LEAVES[1]: INNER}
# A parent after its level completed, as the outcome words it.
LEVEL_WORDS = {"pending": "released into pending", "awaiting_children": "still awaiting_children",
               "failed": "still failed", "none": "gone"}


def tree_spec() -> dict[str, Any]:
    return {
        "parent": {"id": ROOT, "payload": "publish the catalogue"},
        "children": [
            {"id": INNER, "payload": "build the index",
             "children": [{"id": LEAVES[0], "payload": "index A-M"}, {"id": LEAVES[1], "payload": "index N-Z"}]},
            {"id": TWIG, "payload": "render the cover"},
        ],
    }


def node_picture(view: QueueView, node_id: str, depth: int, walked: bool) -> dict[str, Any]:
    row = view.row(node_id)
    deps = view.row(node_id, ":dependencies")
    processed = view.row(node_id, ":processed")
    up = PARENT_OF.get(node_id)
    state = row.value.get("state") if row else None
    if state is None and up is not None:
        # retired: what its parent's :processed remembers of it
        counted = flow.read_flow(view, up, [(view, node_id)]).children[0].counted
        state = "completed" if counted == "processed" else None
    return {
        "id": node_id, "depth": depth, "walked": walked,
        "role": "root" if depth == 0 else ("inner" if node_id == INNER else "leaf"),
        "state": state, "sets": view.sets_of(node_id),
        "parent": row.value.get("parent") if row else None,
        "dependencies": int(deps.value) if deps else None,
        "processed": sorted(processed.value) if processed else [],
    }


def node_line(n: dict[str, Any]) -> str:
    if n["state"] is None:
        return f"{n['id']}: not landed"
    if n["state"] == "completed":
        return f"{n['id']}: completed, counted in {PARENT_OF[n['id']]}'s :processed"
    where = f"in {', '.join(n['sets'])}" if n["sets"] else "in no state set"
    line = f"{n['id']}: {n['state']}, {where}"
    if n["dependencies"] is not None:
        line += f", :dependencies = {n['dependencies']}"
    if n["parent"]:
        line += f", parent = {n['parent']}"
    return line


class Tree(Widget):
    name = "tree"
    title = "The two-level tree"
    queue_parts = (("tree",),)
    tour = ("next", "next", "next", "next", "next", "complete-level", "complete-level")
    labels: ClassVar[dict[str, str]] = {"next": "Next node", "previous": "Previous node", "walk": "Walk the whole tree",
              "complete-level": "Complete the deepest level", "reset": "Reset"}

    def job_ids(self, queue: str) -> list[str]:
        return [ROOT, INNER, *LEAVES, TWIG]

    def order(self, ctx: Context) -> list[tuple[Any, Any]]:
        return flows.walk_order(parse_flow(self.queues(ctx)[0], tree_spec()))

    async def land(self, ctx: Context) -> None:
        # The tree starts before its walk: nothing landed yet.
        await self.remember(ctx, walked="0")

    def describe(self, views: list[QueueView], state: dict[str, str]) -> dict[str, Any]:
        view = views[0]
        walked = int(state.get("walked") or 0)
        order = [ROOT, INNER, *LEAVES, TWIG]  # the walk's order: parent first, depth first
        depth = {ROOT: 0, **LEVEL}
        nodes = [node_picture(view, n, depth[n], i < walked) for i, n in enumerate(order)]
        upcoming = order[walked] if walked < len(order) else None
        head = (f"Walked {walked} of {len(order)} nodes" + (f" (next: {upcoming})" if upcoming else "")
                if walked else "Before the walk: no node has landed")
        landed = [node_line(n) for n in nodes if n["state"] is not None]
        root = nodes[0]
        fate = flow.fate(root["state"], root["sets"]) if root["state"] else "the root has not landed"
        readout = f"{head}. " + ("; ".join(landed) + ". " if landed else "") + f"The root: {fate}."
        return {"readout": readout, "picture": {"walked": walked, "total": len(order), "next": upcoming,
                                                "nodes": nodes}}

    # -- the walk --------------------------------------------------------------
    async def walk_to(self, ctx: Context, k: int) -> None:
        """Clear the tree and land its first `k` nodes, in the walk's order."""
        await self.clear(ctx)
        await self.remember(ctx, landed="1", walked="0")
        for node, up in self.order(ctx)[:k]:
            await flows.land_node(ctx.conn, node, up)
        await self.remember(ctx, walked=str(k))

    @action("next")
    async def next_node(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        walked = int((await self.state(ctx)).get("walked") or 0)
        order = self.order(ctx)
        if walked >= len(order):
            return Outcome("Every node has landed: the walk is over. Complete the deepest level, or Reset.", "info")
        node, up = order[walked]
        await flows.land_node(ctx.conn, node, up)
        await self.remember(ctx, walked=str(walked + 1))
        queue = self.queues(ctx)[0]
        fields = await ctx.conn.hmget(keyspace.job_key(queue, node.id), ["state", "parent"])
        deps = text(await ctx.conn.get(keyspace.dependencies_key(queue, node.id)))
        state, parent = (text(v) for v in fields)
        if node.children:
            what = (f"held as a parent (state {state}, :dependencies = {deps}, in no state set)"
                    + (f" and landed as a child of {parent} (parent = {parent})" if parent else ""))
        else:
            what = f"landed as a leaf (state {state}, in pending, parent = {parent})"
        return Outcome(f"Node {walked + 1} of {len(order)}, {node.id}: {what}.",
                       detail={"node": node.id, "state": state, "parent": parent, "dependencies": deps})

    @action("previous")
    async def previous_node(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        walked = int((await self.state(ctx)).get("walked") or 0)
        await self.walk_to(ctx, max(0, walked - 1))
        return Outcome(f"Replayed the walk on Valkey to node {max(0, walked - 1)} of {len(self.order(ctx))}.")

    @action("walk")
    async def walk(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        await self.clear(ctx)
        await self.remember(ctx, landed="1", walked="0")
        parent, children = await flows.add(ctx.conn, self.queues(ctx)[0], tree_spec())
        await self.remember(ctx, walked=str(len(self.order(ctx))))
        return Outcome(f"flows.add walked the whole tree in one call and returned ({parent}, [{', '.join(children)}]).",
                       detail={"parent": parent, "children": children})

    @action("goto")
    async def goto(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        """`#tree-step=N`: up to the last node, the walk replayed natively; past it, click by click."""
        step, note = tour_step_of(body, len(self.tour))
        nodes = len(self.order(ctx))
        if step > nodes:
            outcome = await self.replay(ctx, step)
            return Outcome(note + outcome.text, outcome.kind, outcome.detail)
        await self.walk_to(ctx, step)
        return Outcome(f"{note}Step {step} of {len(self.tour)}: the walk replayed on Valkey to node {step} of {nodes}.")

    # -- completions, level by level -------------------------------------------
    @action("complete-level")
    async def complete_level(self, ctx: Context, body: dict[str, Any]) -> Outcome:
        queue = self.queues(ctx)[0]
        start = ctx.take_start() or await snapshot.read_queue(ctx.conn, queue, self.job_ids(queue))
        pending = start.members("pending")
        levels = [LEVEL[m] for m in pending if m in LEVEL]
        if not levels:
            return Outcome("No child of the tree waits in pending: walk the tree first, or Reset.", "info")
        level = max(levels)
        targets = [m for m in pending if LEVEL.get(m) == level]
        ups = sorted({PARENT_OF[m] for m in targets})
        done = []
        for expected in targets:
            claimed = await jobs.claim(ctx.conn, queue)
            assert claimed is not None and claimed[0] == expected, claimed  # ids sort level by level
            seen = start.row(expected)
            line = jobs.lineage_of_row(queue, seen.value if seen else None)
            await jobs.complete(ctx.conn, queue, claimed[0], claimed[1], f"{claimed[0]} done", line=line,
                                tail=ctx.tail)
            done.append(claimed[0])
        said, reads = [], {}
        for i, u in enumerate(ups):
            counter = start.row(u, ":dependencies")
            said.append(f"{u}'s :dependencies {counter.value if counter else None} → {{{{d{i}}}}}, {{{{s{i}}}}}")
            reads[f"d{i}"] = Reading(("GET", keyspace.dependencies_key(queue, u)))
            reads[f"s{i}"] = Reading(("HGET", keyspace.job_key(queue, u), "state"), LEVEL_WORDS)
        return Outcome(f"Completed level {level} ({', '.join(done)}): {'; '.join(said)}.",
                       detail={"level": level, "completed": done}, reads=reads)
