"""The lab's own events (resets, class changes), published to every worker for the streams of
the sandboxes named (None: all); each carries an id, handed on once (a cluster repeats a PUBLISH)."""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from typing import Any, Literal, get_args

from server.emq.wire import Conn

EVENTS_CHANNEL = "emqlab:events"
# What a page may be told: a reset of its sandbox, or a change of its class.
Kind = Literal["reset", "room"]
KINDS = get_args(Kind)


def encode(kind: Kind, sandboxes: list[str] | None, data: dict[str, Any]) -> str:
    """The message that tells every worker's hub: the streams of `sandboxes` hear `kind` with `data`."""
    return json.dumps({"type": kind, "sandboxes": sandboxes, "data": data, "id": secrets.token_hex(8)})


async def publish(conn: Conn, kind: Kind, sandboxes: list[str] | None, data: dict[str, Any]) -> None:
    await conn.publish(EVENTS_CHANNEL, encode(kind, sandboxes, data))


def decode(raw: Any) -> dict[str, Any] | None:
    """A published lab event, or None for one that is not JSON, of no known kind or without its data."""
    try:
        event = json.loads(raw)
    except (TypeError, ValueError):
        return None
    known = isinstance(event, dict) and event.get("type") in KINDS and isinstance(event.get("data"), dict)
    return event if known else None


class Seen:
    """The ids of the last `keep` events handed on: each is handed on once."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.ids: OrderedDict[str, None] = OrderedDict()

    def first(self, event_id: Any) -> bool:
        if not isinstance(event_id, str):
            return True
        if event_id in self.ids:
            return False
        self.ids[event_id] = None
        while len(self.ids) > self.keep:
            self.ids.popitem(last=False)
        return True
