"""Adding flows: ``add``, ``add_bulk`` and the three paths ``add`` picks from.

A flow is checked whole first (``shape.parse_flow``). A same-queue flow is one atomic
``enqueue_flow``; a tree or cross-queue flow is walked host-side, parent first (hold it,
then land each child on its own slot). The first refusal stops the walk and is raised;
the parent stays held, and ``add`` again with the same ids resumes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.emq import keyspace, pump, registry
from server.emq.errors import EmqError, StateRefused
from server.emq.shape import FlowShapeError, Node, parse_flow, policy_token
from server.emq.wire import Conn, as_int

__all__ = ["FlowShapeError", "policy_token"]  # re-exported

Landed = tuple[str, list[str]]


async def add(conn: Conn, queue: str, flow: Any) -> Landed:
    """Add one flow; returns ``(parent_id, [child_ids])`` in spec order."""
    return await _add_node(conn, parse_flow(queue, flow))


async def add_bulk(conn: Conn, queue: str, flows: Sequence[Any]) -> list[Landed]:
    """Add many flows one at a time; returns the landed ones in input order. Every flow is
    checked first (one ill-formed id: nothing lands); a refused flow is dropped, the batch goes on."""
    roots = [parse_flow(queue, flow, f"flows[{i}]") for i, flow in enumerate(flows)]
    return await _sequential(conn, roots)


async def _sequential(conn: Conn, roots: list[Node]) -> list[Landed]:
    """Add each flow in turn; a refused flow is dropped and the walk goes on."""
    landed: list[Landed] = []
    for root in roots:
        try:
            landed.append(await _add_node(conn, root))
        except EmqError:
            continue
    return landed


def _path(root: Node) -> str:
    if any(child.children for child in root.children):
        return "tree"
    if any(child.queue != root.queue for child in root.children):
        return "cross-queue"
    return "same-queue"


async def _add_node(conn: Conn, root: Node) -> Landed:
    if _path(root) == "same-queue":
        await _add_same_queue(conn, root)
    else:
        # trees and cross-queue flows: parent first, then each child
        retry = await _hold(conn, root, None)
        await _land_children(conn, root, retry)
    return root.id, [child.id for child in root.children]


# --- the atomic same-queue add ---------------------------------------------


def enqueue_flow_call(queue: str, flow: Any) -> tuple[list[str], list[str]]:
    """The KEYS and ARGV ``enqueue_flow`` runs with (the web stepper runs its prefixes with them)."""
    return _same_queue_call(parse_flow(queue, flow))


def _same_queue_call(root: Node) -> tuple[list[str], list[str]]:
    queue = root.queue
    keys = [
        keyspace.job_key(queue, root.id),
        keyspace.dependencies_key(queue, root.id),
        keyspace.queue_key(queue, "pending"),
    ] + [keyspace.job_key(queue, child.id) for child in root.children]
    args = [root.id, root.payload, str(len(root.children))]
    for child in root.children:
        args += [child.id, child.payload]
    return keys, args


async def _add_same_queue(conn: Conn, root: Node) -> None:
    keys, args = _same_queue_call(root)
    await registry.run(conn, "enqueue_flow", keys, args)
    # The policies as plain HSETs after the atomic land, one round trip for them all.
    async with conn.pipeline(transaction=False) as pipe:
        for child in root.children:
            pipe.hset(keyspace.job_key(child.queue, child.id), "parent_policy", child.policy)
        await pipe.execute()


# --- trees and cross-queue flows: the host-side walk ------------------------


async def _hold(conn: Conn, node: Node, up: Node | None) -> bool:
    """Hold ``node`` as a parent; True when it was already held (a retry)."""
    up_id = up.id if up else ""
    up_queue = up.queue if up and up.queue != node.queue else ""
    keys = [keyspace.job_key(node.queue, node.id), keyspace.dependencies_key(node.queue, node.id)]
    args = [node.id, node.payload, str(len(node.children)), up_id, up_queue]
    return as_int(await registry.run(conn, "hold_parent", keys, args)) == 2


async def _land_leaf(conn: Conn, child: Node, parent: Node) -> bool:
    """Land one leaf on its own slot; False when its row already existed."""
    keys = [keyspace.job_key(child.queue, child.id), keyspace.queue_key(child.queue, "pending")]
    args = [child.id, child.payload, parent.id, parent.queue if child.queue != parent.queue else ""]
    return as_int(await registry.run(conn, "enqueue_flow_child", keys, args)) == 1


async def _land_children(conn: Conn, parent: Node, retry: bool) -> None:
    for child in parent.children:
        # On a retry a child may have completed already (row gone, counted or in an
        # outbox): landing it again would make the counter wait for it twice.
        if retry and await _already_counted(conn, child, parent):
            continue
        if child.children:
            try:
                child_retry = await _hold(conn, child, parent)
            except StateRefused:
                if retry:
                    continue  # landed earlier and since released: leave it be
                raise
            if not child_retry:
                await _write_policy(conn, child)
            await _land_children(conn, child, child_retry)
        elif await _land_leaf(conn, child, parent):
            # right after the child lands, and only then: a row that already
            # existed may be finishing, and an HSET must not revive it
            await _write_policy(conn, child)


async def _write_policy(conn: Conn, child: Node) -> None:
    await conn.hset(keyspace.job_key(child.queue, child.id), "parent_policy", child.policy)


async def _already_counted(conn: Conn, child: Node, parent: Node) -> bool:
    """Has ``parent`` counted ``child``, or is the count on its way?"""
    for counted in (keyspace.processed_key, keyspace.ignored_key):
        if await conn.hexists(counted(parent.queue, parent.id), child.id):
            return True
    if child.queue == parent.queue:
        return False  # same-queue children count directly, never via the outbox
    return any(e is not None and (e.child, e.parent, e.parent_queue) == (child.id, parent.id, parent.queue)
               for e in map(pump.decoded, await pump.read_all(conn, child.queue)))


# --- the walk one node at a time (the tree widget steps it) --------------------


# Every node with its parent, in the order ``add`` lands a tree: parent first, depth first.
walk_order = Node.walk


async def land_node(conn: Conn, node: Node, up: Node | None) -> None:
    """Land one node as ``add``'s first walk does (hold a parent or land a leaf,
    then write its policy); the nodes before it must have landed."""
    if node.children or up is None:
        already = await _hold(conn, node, up)
        if up is not None and not already:
            await _write_policy(conn, node)
    elif await _land_leaf(conn, node, up):
        await _write_policy(conn, node)
