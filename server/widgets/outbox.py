"""The cross-queue outbox (being built)."""

from __future__ import annotations

from server.widgets.base import Widget


class Outbox(Widget):
    name = "outbox"
    title = "The cross-queue outbox"
    queue_parts = (("outbox",),)
