"""The failure-policy widget's flows, and how each reads back from Valkey.

Two flows share the widget's queues. The main one, a parent and three
children on `failure-policy`, lands in one of two variants: every child on
the policy the learner picked (`uniform`), or each child its own (`mixed`:
one plain `fp`, one naming both flags, one whose row carries a token no
writer of this library would write). The second flow is cross-queue: its
parent on `failure-policy`, its one child on `failure-policy.mail`, so the
child's death travels through mail's outbox before the Pump applies the
policy on the parent's slot.
"""

from __future__ import annotations

from typing import Any

from server.widgets import flow
from server.widgets.snapshot import QueueView

PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")
LINKED, REMOTE = "JOBlinked", "JOBremote"  # the cross-queue flow: parent here, child in mail
POLICIES = ("fp", "id")
VARIANTS = ("uniform", "mixed")
WORDS = {"fp": "fail the parent", "id": "ignore the dependency"}
ERROR = "card declined"
UNKNOWN_TOKEN = "skip"  # what an old or foreign writer might leave in parent_policy


def flag_for(policy: str) -> dict[str, bool]:
    return {"ignore_dependency_on_failure": True} if policy == "id" else {"fail_parent_on_failure": True}


def flow_spec(policy: str, variant: str) -> dict[str, Any]:
    if variant == "mixed":
        flags: list[dict[str, bool]] = [
            {"fail_parent_on_failure": True},
            {"fail_parent_on_failure": True, "ignore_dependency_on_failure": True},
            {"fail_parent_on_failure": True},  # its row's token is then overwritten with UNKNOWN_TOKEN
        ]
    else:
        flags = [flag_for(policy)] * len(CHILDREN)
    return {
        "parent": {"id": PARENT, "payload": "settle invoice 7"},
        "children": [{"id": c, "payload": f"charge {i}", **f} for i, (c, f) in enumerate(zip(CHILDREN, flags), 1)],
    }


def linked_spec(policy: str, mail_queue: str) -> dict[str, Any]:
    return {
        "parent": {"id": LINKED, "payload": "send the receipt"},
        "children": [{"id": REMOTE, "payload": "mail the receipt", "queue": mail_queue, **flag_for(policy)}],
    }


def parent_picture(view: QueueView, parent_id: str) -> dict[str, Any]:
    row = view.row(parent_id)
    deps = view.row(parent_id, ":dependencies")
    processed = view.row(parent_id, ":processed")
    ignored = view.row(parent_id, ":ignored")
    return {
        "id": parent_id,
        "state": row.value.get("state") if row else None,
        "dependencies": int(deps.value) if deps else None,
        "sets": view.sets_of(parent_id),
        "failed_child": row.value.get("failed_child") if row else None,
        "ignored": dict(ignored.value) if ignored else {},
        "processed": dict(processed.value) if processed else {},
    }


def child_picture(parent_view: QueueView, view: QueueView, child_id: str, parent_id: str) -> dict[str, Any]:
    """A child as the shared flow reading words it, with its policy token, error and attempts."""
    child = flow.read_flow(parent_view, parent_id, [(view, child_id)]).children[0]
    row = view.row(child_id)
    fields = row.value if row is not None else {}
    return {**child.as_json(), "policy": fields.get("parent_policy"),
            "error": fields.get("last_error"), "attempts": fields.get("attempts")}


def linked_picture(home: QueueView, mail: QueueView) -> dict[str, Any]:
    outbox = mail.get("flow:outbox")
    return {"parent": parent_picture(home, LINKED), "child": child_picture(home, mail, REMOTE, LINKED),
            "outbox": len(outbox.value) if outbox else 0}


def tokens_said(tokens: list[str]) -> str:
    if not tokens:
        return "No child row is left to read a token from"
    return "The child rows say parent_policy " + " and ".join(
        f"{t} ({WORDS.get(t, 'unknown: resolves to fp')})" for t in tokens)


def readout(parent: dict[str, Any], children: list[dict[str, Any]], tokens: list[str],
            linked: dict[str, Any]) -> str:
    count = {s: sum(c["state"] == s for c in children) for s in ("dead", "pending", "scheduled")}
    count["completed"] = sum(c["counted"] == "processed" for c in children)
    retrying = f", {count['scheduled']} scheduled for a retry" if count["scheduled"] else ""
    waiting = f"{count['pending']} waiting{retrying}"
    main = (
        f"{tokens_said(tokens)}. {count['dead']} died at the cap, {count['completed']} completed, {waiting} → "
        f":dependencies = {parent['dependencies']}, :ignored holds {len(parent['ignored'])}; "
        f"{flow.fate(parent['state'], parent['sets'])}"
    )
    child = linked["child"]
    far = (f" Cross-queue: {REMOTE} in failure-policy.mail: {child['where']}, "
           f"mail's outbox holds {linked['outbox']}; {LINKED}: "
           f"{flow.fate(linked['parent']['state'], linked['parent']['sets'])}.")
    return main + "." + far
