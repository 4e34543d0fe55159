"""The results reader (being built)."""

from __future__ import annotations

from server.widgets.base import Widget


class ResultsReader(Widget):
    name = "results"
    title = "The results reader"
    queue_parts = (("results",),)
