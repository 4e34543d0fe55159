"""What the fan-in reads off its queue's snapshot: the parent and its counter,
the claims in `active`, the readout's sentence, and what an action decides
on (`Peek`), all from keys Valkey returned (server/widgets/fanin.py acts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from server.emq import jobs
from server.widgets import flow
from server.widgets.snapshot import QueueView

PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")


@dataclass(frozen=True)
class Peek:
    """The claims, the head of pending, the counter and each child's token."""

    active: list[str]
    head: str | None
    dependencies: int
    tokens: dict[str, int]
    rows: dict[str, dict[str, str]] = field(default_factory=dict)  # each child's row, {} when retired
    pending: list[str] = field(default_factory=list)
    parent_state: str | None = None



def parent_status(view: QueueView) -> dict[str, Any]:
    """The parent's state as Valkey holds it, and the counter beside it."""
    row = view.row(PARENT)
    deps_key = view.row(PARENT, ":dependencies")
    processed = view.row(PARENT, ":processed")
    state = row.value.get("state") if row else None
    return {
        "state": state,
        "dependencies": int(deps_key.value) if deps_key else None,
        "done": len(processed.value) if processed else 0,
        "in_pending": PARENT in view.members("pending"),
        "sets": view.sets_of(PARENT),
    }


def claimed(view: QueueView) -> list[dict[str, Any]]:
    """The jobs in `active`, oldest lease first: id, token (the row's attempts), deadline."""
    key = view.get("active")
    out = []
    for member, score in key.value if key else []:
        row = view.row(member)
        deadline = datetime.fromtimestamp(float(score) / 1000, UTC)
        out.append({"id": member, "token": row.value.get("attempts") if row else None,
                    "deadline_ms": score, "deadline": deadline.strftime("%H:%M:%S UTC")})
    return out


def readout(status: dict[str, Any], total: int, active: list[dict[str, Any]]) -> str:
    if status["state"] is None:
        return "No flow in this queue: press Reset to land it again."
    held = flow.fate(status["state"], status["sets"])
    line = f"{status['done']} of {total} children complete → :dependencies = {status['dependencies']}; {held}"
    if active:
        line += "; in active: " + ", ".join(f"{a['id']} (token {a['token']})" for a in active)
    return line


def result_of(job_id: str) -> str:
    """What the learner's "worker" records as a child's result."""
    return f"result of {job_id}"


def line_of(queue: str, peek: Peek, job_id: str) -> jobs.Lineage | None:
    """The child's lineage from the row the lock read (None: read it again)."""
    return jobs.lineage_of_row(queue, peek.rows.get(job_id))
