"""What a flow looks like, checked and normalised before anything is written.

``parse_flow`` turns the caller's dict into a tree of ``Node``: ids and queues gated
(``BadId``), payloads strings, each policy one token; a wrong shape raises ``FlowShapeError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.emq import keyspace


class FlowShapeError(ValueError):
    """The flow is not ``{"parent": {"id", "payload"}, "children": [...]}``."""


@dataclass(frozen=True)
class Node:
    """One job of a flow: a leaf, or a parent waiting on ``children``."""

    id: str
    payload: str
    queue: str
    policy: str  # 'fp' or 'id'; what this node's death does to its parent
    children: tuple[Node, ...] = ()

    def walk(self, up: Node | None = None) -> list[tuple[Node, Node | None]]:
        """This node and every descendant, each with its parent: parent first, depth first."""
        found: list[tuple[Node, Node | None]] = [(self, up)]
        for child in self.children:
            found += child.walk(self)
        return found


def policy_token(child: Mapping[str, Any]) -> str:
    """The child's failure policy: 'id' when it asks to ignore the dependency (even if it also
    asks to fail the parent: proceeding is the explicit opt-in), else 'fp'."""
    return "id" if child.get("ignore_dependency_on_failure") else "fp"


def _payload(spec: Mapping[str, Any], where: str) -> str:
    if "payload" not in spec:
        raise FlowShapeError(f"{where}: missing 'payload'")
    value = spec["payload"]
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    raise FlowShapeError(f"{where}: payload must be a string (or a dict/list to JSON-encode)")


def _job_id(spec: Mapping[str, Any], where: str) -> str:
    if "id" not in spec:
        raise FlowShapeError(f"{where}: missing 'id'")
    return keyspace.check_id(spec["id"])  # raises BadId for anything ill-formed


def _child(spec: Any, where: str, default_queue: str) -> Node:
    if not isinstance(spec, Mapping):
        raise FlowShapeError(f"{where}: a child must be a dict")
    # absent or None: the parent's queue; anything else (even "") must be well-formed
    queue = keyspace.check_queue(default_queue if spec.get("queue") is None else spec["queue"])
    job_id, payload = _job_id(spec, where), _payload(spec, where)
    for flag in ("fail_parent_on_failure", "ignore_dependency_on_failure"):
        if flag in spec and not isinstance(spec[flag], bool):
            raise FlowShapeError(f"{where}: {flag} must be true or false")
    return Node(job_id, payload, queue, policy_token(spec), _children(spec.get("children") or [], where, queue))


def _children(specs: Any, where: str, queue: str) -> tuple[Node, ...]:
    if not isinstance(specs, Sequence) or isinstance(specs, (str, bytes)):
        raise FlowShapeError(f"{where}: 'children' must be a list")
    return tuple(_child(spec, f"{where}.children[{i}]", queue) for i, spec in enumerate(specs))


def parse_flow(queue: str, flow: Any, where: str = "flow") -> Node:
    keyspace.check_queue(queue)
    if not isinstance(flow, Mapping):
        raise FlowShapeError(f"{where}: a flow must be a dict with 'parent' and 'children'")
    parent = flow.get("parent")
    if not isinstance(parent, Mapping):
        raise FlowShapeError(f"{where}: 'parent' must be a dict with 'id' and 'payload'")
    parent_id, payload = _job_id(parent, f"{where}.parent"), _payload(parent, f"{where}.parent")
    children = _children(flow.get("children"), where, queue)
    if not children:
        # A parent with no children would be held forever: nothing releases it.
        raise FlowShapeError(f"{where}: a flow needs at least one child")
    root = Node(parent_id, payload, queue, "fp", children)
    # Two jobs of one flow on one row: the parent's counter could never reach zero.
    seen: set[tuple[str, str]] = set()
    for node, _ in root.walk():
        if (node.queue, node.id) in seen:
            raise FlowShapeError(f"{where}: job {node.id} appears twice in queue {node.queue}")
        seen.add((node.queue, node.id))
    return root
