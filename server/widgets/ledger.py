"""The bulk ledger (being built)."""

from __future__ import annotations

from server.widgets.base import Widget


class Ledger(Widget):
    name = "ledger"
    title = "The bulk ledger"
    queue_parts = (("ledger",),)
