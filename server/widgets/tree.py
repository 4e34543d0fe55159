"""The tree: a flow whose child has children of its own, walked node by node.

"Next node" lands one node of `flows.add`'s own walk (`walk_order`,
`land_node`); "Walk the whole tree" is `flows.add`. How far the walk has gone
is read from the keys: a node landed when its row exists or its parent counted it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from server.emq import flows, jobs
from server.emq.errors import EmqError
from server.emq.shape import Node, parse_flow
from server.widgets import base, flow
from server.widgets.base import Body, Description, Design, Outcome, Step, Value, Widget, action, do, info, reading
from server.widgets.turn import Turn
from server.widgets.view import Moment, QueueView

ROOT, INNER, TWIG = "JOBtree", "JOBbranch", "JOBtwig"
LEAVES = ("JOBleaf1", "JOBleaf2")
ORDER = (ROOT, INNER, *LEAVES, TWIG)  # the walk's order: parent first, depth first
LEVEL = {ROOT: 0, INNER: 1, TWIG: 1, LEAVES[0]: 2, LEAVES[1]: 2}
PARENT_OF = {INNER: ROOT, TWIG: ROOT, LEAVES[0]: INNER, LEAVES[1]: INNER}
WALKED = ("root", "inner", "leaf", "leaves", "walked")  # the milestone each node's landing reaches


def tree_spec() -> dict[str, Any]:
    return {"parent": {"id": ROOT, "payload": "publish the catalogue"},
            "children": [{"id": INNER, "payload": "build the index",
                          "children": [{"id": LEAVES[0], "payload": "index A-M"},
                                       {"id": LEAVES[1], "payload": "index N-Z"}]},
                         {"id": TWIG, "payload": "render the cover"}]}


def counted(view: QueueView, node: str) -> bool:
    """Has the node's parent counted it (its row retired by its completion)?"""
    up = PARENT_OF.get(node)
    return up is not None and node in view.fields(up, ":processed")


def landed(view: QueueView) -> list[str]:
    """The nodes that have landed: a row, or a count in the parent's :processed."""
    return [n for n in ORDER if view.row(n) is not None or counted(view, n)]


class NodeCard(msgspec.Struct, kw_only=True):
    id: str
    depth: int
    role: Literal["root", "inner", "leaf"]
    state: str | None  # "completed": no row, counted in its parent's :processed
    sets: list[str]
    parent: str | None
    dependencies: int | None
    processed: list[str]


class Picture(msgspec.Struct, kw_only=True):
    landed: int
    total: int
    next: str | None  # the next node in the walk
    nodes: list[NodeCard]


def node_json(view: QueueView, node: str) -> NodeCard:
    row = view.fields(node)
    state = row.get("state") if view.row(node) is not None else ("completed" if counted(view, node) else None)
    return NodeCard(id=node, depth=LEVEL[node], role="root" if node == ROOT else "inner" if node == INNER else "leaf",
                    state=state, sets=view.sets_of(node), parent=row.get("parent"),
                    dependencies=view.number(node, ":dependencies"), processed=sorted(view.fields(node, ":processed")))


def node_line(n: NodeCard) -> str:
    if n.state == "completed":
        return f"{n.id}: completed, counted in {PARENT_OF[n.id]}'s :processed"
    line = f"{n.id}: {n.state or 'no state'}, in {', '.join(n.sets) or 'no state set'}"
    line += f", :dependencies = {n.dependencies}" if n.dependencies is not None else ""
    return line + (f", parent = {n.parent}" if n.parent else "")


class Tree(Widget):
    name = "tree"
    title = "The two-level tree"
    design = Design("tree", ("Reset",))  # DESIGN.md's row
    queue_parts = ("tree",)
    rows = ORDER
    tour = (
        Step("root", "The root landed first, held on its two children", (do("next"),)),
        Step("inner", "JOBbranch landed counted by the root and held on its own leaves", (do("next"),)),
        Step("leaf", "The first leaf landed in pending: the first job a worker can take", (do("next"),)),
        Step("leaves", "JOBbranch's second leaf landed", (do("next"),)),
        Step("walked", "JOBtwig landed: the whole tree is walked", (do("next"),)),
        Step("inner-released", "The leaves' completions released JOBbranch into pending", (do("complete-level"),)),
        Step("root-released", "The next level's completions released the root", (do("complete-level"),)),
    )

    def order(self, turn: Turn) -> list[tuple[Node, Node | None]]:
        return flows.walk_order(parse_flow(turn.queue(), tree_spec()))

    # land(): the tree starts before its walk, with nothing landed.

    def describe(self, moment: Moment) -> Description:
        view = moment.first
        nodes = [node_json(view, n) for n in ORDER]
        done = landed(view)
        missing = [n for n in ORDER if n not in done]
        picture = Picture(landed=len(done), total=len(ORDER), next=missing[0] if missing else None, nodes=nodes)
        if not done:
            return Description("Before the walk: no node has landed yet; Next node lands the root first.", picture)
        head = f"{len(done)} of {len(ORDER)} nodes landed" + (
            f" (next in the walk: {missing[0]})" if missing else ", the walk is complete")
        lines = "; ".join(node_line(n) for n in nodes if n.state is not None)
        root = nodes[0]
        fate = flow.fate(root.state, root.sets) if view.row(ROOT) is not None else "no row"
        return Description(f"{head}. " + (f"{lines}. " if lines else "") + f"The root: {fate}.", picture)

    root_claimable = base.parent_reading("root-claimable", ROOT)

    @reading("root-held-child-pending")
    def root_held_child_pending(self, now: Moment, before: Moment) -> Value:
        view = now.first
        return (view.fields(ROOT).get("state") == "awaiting_children"
                and any(n in view.members("pending") for n in PARENT_OF))

    @action("next", "Next node")
    async def next_node(self, turn: Turn, body: Body) -> Outcome:
        done = landed(turn.moment.first)
        missing = [i for i, n in enumerate(ORDER) if n not in done]
        if not missing:
            return info("Every node has landed: the walk is over. Complete the deepest level, or press Reset.")
        i = missing[0]
        node, up = self.order(turn)[i]
        try:
            await flows.land_node(turn.conn, node, up)
        except EmqError as exc:
            return Outcome(text=f"Landing {node.id} was refused: {exc.message}", kind="refused")
        n = node_json((await turn.read()).first, node.id)
        where = ", ".join(n.sets) or "no state set"
        if node.children or up is None:
            what = f"held as a parent (state {n.state}, :dependencies = {n.dependencies}, in {where})"
            what += f", and landed as a child of {n.parent}" if n.parent else ""
        else:
            what = f"landed as a leaf (state {n.state}, in {where}), a child of {n.parent}"
        return Outcome(text=f"Node {i + 1} of {len(ORDER)}, {node.id}: {what}.", reached=(WALKED[i],),
                       detail={"node": node.id, "state": n.state, "parent": n.parent})

    @action("previous", "Previous node")
    async def previous_node(self, turn: Turn, body: Body) -> Outcome:
        done = landed(turn.moment.first)
        if not done:
            return info("No node has landed yet: there is no step of the walk to go back to.")
        back = len(done) - 1
        await turn.clear()
        for node, up in self.order(turn)[:back]:
            await flows.land_node(turn.conn, node, up)
        return Outcome(text=f"Cleared the tree and replayed its walk on Valkey up to node {back} of {len(ORDER)}.",
                       detail={"landed": back})

    @action("walk", "Walk the whole tree")
    async def walk(self, turn: Turn, body: Body) -> Outcome:
        await turn.clear()
        parent, children = await flows.add(turn.conn, turn.queue(), tree_spec())
        return Outcome(text=f"Cleared the tree; flows.add walked it in one call and returned "
                            f"({parent}, [{', '.join(children)}]).", reached=WALKED,
                       detail={"parent": parent, "children": children})

    @action("complete-level", "Complete the deepest level")
    async def complete_level(self, turn: Turn, body: Body) -> Outcome:
        view = turn.moment.first
        pending = view.members("pending")
        waiting = [m for m in pending if m in PARENT_OF]
        if not waiting:
            return info(self.idle(view))
        level = max(LEVEL[m] for m in waiting)
        targets = {m for m in waiting if LEVEL[m] == level}
        done: list[str] = []
        stopped = ""
        for head in pending[: len(targets)]:  # each one completed is a target: then every target is done
            if head not in targets:  # claim takes the head of pending: never a job of someone else's
                stopped = f" {head} sits ahead of them in pending, so the rest were left alone."
                break
            got = await turn.claim()
            if got is None or got[0] != head:
                stopped = f" Claim answered {got[0] if got else 'nothing'} instead of {head}, whose row is gone."
                break
            await jobs.complete(turn.conn, turn.queue(), head, got[1], f"{head} done", line=got[2], tail=turn.after)
            done.append(head)
        now = (await turn.read()).first
        said, reached = [], []
        for up in sorted({PARENT_OF[m] for m in done}):
            state = now.fields(up).get("state")
            if state == "pending":
                said.append(f"{up} was released into pending")
                reached.append("inner-released" if up == INNER else "root-released")
            else:
                said.append(f"{up} is {state or 'without a row'}, :dependencies = {now.number(up, ':dependencies')}")
        return Outcome(text=f"Completed level {level} ({', '.join(done) or 'none'}): " + "; ".join(said) + "."
                            + stopped, reached=tuple(reached), detail={"level": level, "completed": done})

    @staticmethod
    def idle(view: QueueView) -> str:
        """No child of the tree waits in pending: why, from the keys."""
        done = landed(view)
        if not done:
            return "Nothing has landed yet: walk the tree first (Next node, or Walk the whole tree)."
        if ROOT in view.members("pending"):
            return (f"No child of the tree waits in pending: every level is complete, and the root {ROOT} "
                    "was released and waits in pending itself.")
        if len(done) < len(ORDER):
            return (f"No child of the tree waits in pending yet: {len(done)} of {len(ORDER)} nodes have landed. "
                    "Press Next node.")
        root = view.fields(ROOT)
        return f"No child of the tree waits in pending; the root: {flow.fate(root.get('state'), view.sets_of(ROOT))}."
