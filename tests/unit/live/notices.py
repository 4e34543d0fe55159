"""The notices the hub makes of one fan-in queue's keys, for the live tests."""

from __future__ import annotations

from server.live.fanout import Notice

S = "s0123456789"
Q = f"{S}.fanin"


def lock(event: str) -> Notice:
    """The widget lock's notice: "set", "expire", "del", "expired"."""
    return Notice("lock", {"queue": Q, "key": f"lab:{{{Q}}}:lock", "event": event})


def effect(key: str) -> Notice:
    """A write to one of the queue's keys."""
    return Notice("effect", {"queue": Q, "key": f"emq:{{{Q}}}:{key}", "event": "hset"})


def state() -> Notice:
    """A write to the widget's lab state hash."""
    return Notice("state", {"queue": Q, "key": f"lab:{{{Q}}}:state", "event": "hset"})
