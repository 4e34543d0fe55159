"""The ledger's batches and how one flow of them reads back from Valkey.

Flows here name their children's queues RELATIVE to the ledger (`orders`,
`mail`, `billing`); `resolve` turns them into the sandbox's real queues at the
last moment, so a learner's batch can never name a key outside its sandbox.
`flow_status` builds one flow's row of the picture (and its sentence) only
from the keys a snapshot just read and the result the add returned.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from server.emq import keyspace, pump
from server.emq.shape import FlowShapeError, parse_flow
from server.settings import Settings
from server.widgets.base import BadInput, Context
from server.widgets.flow import plural  # noqa: F401  (ledger.py imports it from here)
from server.widgets.snapshot import QueueView

LEDGER_QUEUES = ("orders", "mail", "billing")  # orders first: the parents' queue
FLOW4_CHILD_FIXED = "JOB0KHTOWnGLuK"


def _flow(parent: str, what: str, *children: tuple[str, str | None]) -> dict[str, Any]:
    specs = []
    for i, (child, queue) in enumerate(children, 1):
        spec: dict[str, Any] = {"id": child, "payload": f"{what}, step {i}"}
        if queue:
            spec["queue"] = queue
        specs.append(spec)
    return {"parent": {"id": parent, "payload": what}, "children": specs}


FIXED: list[dict[str, Any]] = [
    # 1: same-queue, lands whole in one enqueue_flow
    _flow("JOB0KHTOWnGLuA", "pack order A", ("JOB0KHTOWnGLuB", None), ("JOB0KHTOWnGLuC", None)),
    # 2: cross-queue (a child in mail), lands parent first
    _flow("JOB0KHTOWnGLuD", "confirm order D", ("JOB0KHTOWnGLuE", "mail"), ("JOB0KHTOWnGLuF", None)),
    # 3: same-queue with a well-formed non-JOB child: the kind law refuses it, nothing is written
    _flow("JOB0KHTOWnGLuG", "pack order G", ("JOB0KHTOWnGLuH", None), ("TASK0KHTOWnGLuI", None)),
    # 4: cross-queue, its second child non-JOB: stops partway, parent held
    _flow("JOB0KHTOWnGLuJ", "bill order J", ("JOB0KHTOWnGLuL", "billing"), ("TASK0KHTOWnGLuK", "billing")),
]
# One well-formed flow, then one whose child id cannot be a key: the gate
# refuses the whole batch before the first flow is written.
BAD_BATCH: list[dict[str, Any]] = [
    _flow("JOB0KHTOWnGLuM", "pack order M", ("JOB0KHTOWnGLuN", None), ("JOB0KHTOWnGLuO", None)),
    _flow("JOB0KHTOWnGLuP", "pack order P", ("JOB bad}", None)),
]


def flow4_corrected() -> dict[str, Any]:
    """Flow 4 as "Retry flow 4" sends it: the same ids, the bad child made a JOB id."""
    fixed = copy.deepcopy(FIXED[3])
    fixed["children"][1]["id"] = FLOW4_CHILD_FIXED
    return fixed


def resolve(ctx: Context, flow: dict[str, Any]) -> dict[str, Any]:
    """The flow with each child's relative queue mapped into the sandbox."""
    out = copy.deepcopy(flow)
    for child in out["children"]:
        child["queue"] = ctx.queue("ledger", child.get("queue") or "orders")
    return out


def flow_ids(batch: list[dict[str, Any]], rel: str) -> list[str]:
    """The ids `batch` puts on the ledger queue `rel` (parents are on orders)."""
    ids = [f["parent"]["id"] for f in batch] if rel == "orders" else []
    ids += [c["id"] for f in batch for c in f["children"] if (c.get("queue") or "orders") == rel]
    return [i for i in ids if isinstance(i, str)]


def _outbox_children(entries: list[str]) -> set[str]:
    """Children whose completion waits in an outbox for the Pump."""
    found = set()
    for raw in entries:
        try:
            found.add(pump.decode_entry(raw).child)
        except pump.PoisonEntry:
            continue
    return found


def _sets(view: QueueView, job_id: str) -> list[str]:
    return view.sets_of(job_id)


def flow_status(
    n: int, flow: dict[str, Any], views: dict[str, QueueView], result: list[Any],
    tried: bool, error: str | None, retry: list[Any] | None,
) -> dict[str, Any]:
    """One flow's row: its result entry and its parent and children as Valkey holds them."""
    parent = flow["parent"]["id"]
    orders = views["orders"]
    row, deps = orders.row(parent), orders.row(parent, ":dependencies")
    processed = orders.row(parent, ":processed")
    done = processed.value if processed else {}
    children = []
    for spec in flow["children"]:
        rel = spec.get("queue") or "orders"
        view, cid = views[rel], spec["id"]
        crow = view.row(cid) if isinstance(cid, str) and keyspace.ID_RE.fullmatch(cid) else None
        outbox = view.get("flow:outbox")
        if crow is not None:
            state = crow.value.get("state")
        elif cid in done:
            state = "completed"  # its row is retired; the parent counted it
        elif outbox is not None and cid in _outbox_children(outbox.value):
            state = "completed, in the outbox"
        else:
            state = None
        children.append({"id": cid, "queue": rel, "state": state, "sets": _sets(view, cid)})
    entry = next(([p, c] for p, c in result if p == parent), None)
    status = {
        "number": n, "parent": parent, "tried": tried, "entry": entry, "error": error, "retry": retry,
        "path": "same-queue" if all(c["queue"] == "orders" for c in children) else "cross-queue",
        "state": row.value.get("state") if row else None,
        "dependencies": int(deps.value) if deps else None,
        "processed": len(done), "sets": _sets(orders, parent), "children": children,
    }
    status["line"] = flow_line(status)
    return status


def flow_line(s: dict[str, Any]) -> str:
    """The sentence for one flow, from the row `flow_status` built."""
    if s["entry"]:
        found = f"in the result: ({s['entry'][0]}, [{', '.join(s['entry'][1])}])"
    elif not s["tried"]:
        found = "not added yet"
    else:
        found = "not in the result" + (f" (refused: {s['error']})" if s["error"] else "")
    if s["retry"]:
        found += f"; the retry returned ({s['retry'][0]}, [{', '.join(s['retry'][1])}])"
    if s["state"] is None:
        parent = f"parent {s['parent']}: no row"
    else:
        where = f"in {', '.join(s['sets'])}" if s["sets"] else "in no state set"
        deps = "no :dependencies" if s["dependencies"] is None else f":dependencies = {s['dependencies']}"
        parent = f"parent {s['parent']}: {s['state']}, {deps}, {where}"
        if s["processed"]:
            parent += f", {s['processed']} in :processed"
    kids = ", ".join(
        f"{c['id']} {c['state']}" + (f" (ledger.{c['queue']})" if c["sets"] else "")
        if c["state"] else f"{c['id']}: no row"
        for c in s["children"]
    )
    tail = ""
    if s["tried"] and s["state"] is None and not any(c["state"] for c in s["children"]):
        tail = " — the refused flow wrote nothing"
    return f"Flow {s['number']} ({s['path']}) · {found} · {parent}; children: {kids}{tail}."


# -- a learner's own batch (the custom-batch action) ---------------------------

_CHILD_FIELDS = {"id", "payload", "queue", "fail_parent_on_failure", "ignore_dependency_on_failure"}


def _payload(value: Any, where: str, limit: int) -> Any:
    if isinstance(value, str):
        size = len(value.encode("utf-8"))
    elif isinstance(value, (dict, list)):
        size = len(json.dumps(value, separators=(",", ":")).encode("utf-8"))
    else:
        raise BadInput(f"{where}: 'payload' must be a string, an object or a list")
    if size > limit:
        raise BadInput(f"{where}: the payload is {size} bytes; at most {limit} are taken")
    return value


def _gate_id(value: Any, where: str) -> None:
    """The id gate, answered with the field's path so the learner can find it."""
    try:
        keyspace.check_id(value)
    except keyspace.BadId as exc:
        raise BadInput(f"{where}: {exc}") from exc


def _custom_child(child: Any, at: str, limits: Settings) -> dict[str, Any]:
    """One child of a learner's flow, checked field by field (`at` names it)."""
    if not isinstance(child, dict):
        raise BadInput(f"{at}: a child must be an object with an 'id'")
    if set(child) - _CHILD_FIELDS:
        raise BadInput(f"{at}: unknown fields {sorted(set(child) - _CHILD_FIELDS)} "
                       "(nested children are not taken here)")
    _gate_id(child.get("id"), f"{at}.id")
    queue = child.get("queue", "orders")
    if queue not in LEDGER_QUEUES:
        raise BadInput(f"{at}: 'queue' must be one of {', '.join(LEDGER_QUEUES)} (the ledger's queues), "
                       f"not {queue!r}")
    out = {k: child[k] for k in ("id", "fail_parent_on_failure", "ignore_dependency_on_failure") if k in child}
    out["payload"] = _payload(child.get("payload", ""), at, limits.max_payload_bytes)
    if queue != "orders":
        out["queue"] = queue
    return out


def custom_flows(body: dict[str, Any], limits: Settings) -> list[dict[str, Any]]:
    """Check a learner's batch; BadInput (a 400, nothing written) on anything off."""
    given = body.get("flows")
    if not isinstance(given, list):
        raise BadInput("the body must be an object with a list 'flows'")
    if not 1 <= len(given) <= limits.max_flows:
        raise BadInput(f"'flows' must hold 1 to {limits.max_flows} flows; it holds {len(given)}")
    batch: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for i, flow in enumerate(given):
        where = f"flows[{i}]"
        if not isinstance(flow, dict) or not isinstance(flow.get("parent"), dict):
            raise BadInput(f"{where}: a flow needs a 'parent' object with an 'id'")
        children = flow.get("children")
        if not isinstance(children, list) or not 1 <= len(children) <= limits.max_children:
            raise BadInput(f"{where}: 'children' must be a list of 1 to {limits.max_children} children")
        parent = flow["parent"]
        _gate_id(parent.get("id"), f"{where}.parent.id")
        spec: dict[str, Any] = {
            "parent": {"id": parent.get("id"),
                       "payload": _payload(parent.get("payload", ""), f"{where}.parent", limits.max_payload_bytes)},
        }
        spec["children"] = [_custom_child(child, f"{where}.children[{j}]", limits) for j, child in enumerate(children)]
        try:
            # the library's own check: every id gated, the shape as documented
            root = parse_flow("orders", spec, where)
        except (FlowShapeError, keyspace.BadId) as exc:
            raise BadInput(str(exc)) from exc
        for node in root.walk():
            if (node.queue, node.id) in seen:
                raise BadInput(f"{where}: job {node.id} already appears in an earlier flow in {node.queue}")
            seen.add((node.queue, node.id))
        batch.append(spec)
    return batch
