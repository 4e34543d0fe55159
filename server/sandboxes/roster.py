"""The class roster, read from Valkey in two round trips.

One row per learner who joined: their display name, the dive and widget they
were last on, their progress through each widget's tour, when they last acted
and whether a page of theirs is open now. Everything comes from the learner's
own sandbox (`lab:{<sandbox>}:meta`, `lab:{<sandbox>}:progress`), so any worker
reads the same roster.
"""

from __future__ import annotations

from typing import Any, TypedDict

from server.emq.wire import Conn, as_dict
from server.live import presence
from server.sandboxes import learners as class_learners
from server.sandboxes import progress, rooms

PUBLIC_FIELDS = ("name", "page", "widget", "online", "last_seen", "progress")


class LearnerRow(TypedDict):
    """One learner as the class page and roster.json read it."""

    id: str  # the learner's sandbox: Reset and Watch on the class page; not in roster.json
    name: str
    page: str | None
    widget: str | None
    online: bool
    last_seen: float | None
    progress: dict[str, dict[str, Any]]


class Roster(TypedDict):
    code: str
    mode: str
    learners: list[LearnerRow]


def _seen(meta: dict[str, str]) -> float | None:
    try:
        return float(meta["seen"])
    except (KeyError, ValueError):
        return None


def shown(record: progress.WidgetProgress) -> dict[str, Any]:
    """One widget's record as the roster gives it (server/sandboxes/progress.py)."""
    found = record.as_json()
    return {k: found[k] for k in ("reached", "steps", "done", "asked", "right", "verdict")}


async def read(conn: Conn, room: rooms.Room) -> Roster:
    """{"code", "mode", "learners": [{"id", "name", "page", "widget", "online",
    "last_seen", "progress"}]} — `id` is the learner's sandbox (for Reset and
    Watch on the class page; `public` drops it)."""
    ids = await class_learners.learner_ids(conn, room.code)
    replies: list[Any] = []
    if ids:
        async with conn.pipeline(transaction=False) as pipe:
            for sandbox in ids:
                pipe.hgetall(presence.meta_key(sandbox))
                pipe.hgetall(progress.progress_key(sandbox))
            replies = await pipe.execute()
    now = presence.now_ms()
    learners: list[LearnerRow] = []
    for index, sandbox in enumerate(ids):
        meta = as_dict(replies[2 * index])
        made = as_dict(replies[2 * index + 1])
        learners.append({
            "id": sandbox,
            "name": meta.get("name") or "(no name)",
            "page": meta.get("page"),
            "widget": meta.get("widget"),
            "online": presence.is_online(meta, now),
            "last_seen": _seen(meta),
            "progress": {name: shown(record) for name, record in sorted(progress.parse(made).items())},
        })
    return {"code": room.code, "mode": room.mode, "learners": learners}


def public(roster: Roster) -> dict[str, Any]:
    """The roster as roster.json gives it: exactly the documented fields."""
    return {
        "code": roster["code"],
        "mode": roster["mode"],
        "learners": [{k: v for k, v in row.items() if k in PUBLIC_FIELDS} for row in roster["learners"]],
    }


def progress_words(made: dict[str, Any]) -> str:
    """The progress cell: "fanin 2 of 4 steps, 1 of 2 predictions right (last: Right)" per widget."""
    parts = []
    for name, record in made.items():
        said = f"{name} done" if record["done"] else f"{name} {record['reached']} of {record['steps']} steps"
        if record["asked"]:
            last = "Right" if record["verdict"].startswith("Right") else "Not quite"
            said += f", {record['right']} of {record['asked']} predictions right (last: {last})"
        parts.append(said)
    return " · ".join(parts) or "not started"
