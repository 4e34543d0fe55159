"""The failure policy (being built)."""

from __future__ import annotations

from server.widgets.base import Widget


class FailurePolicy(Widget):
    name = "failure-policy"
    title = "The failure policy"
    queue_parts = (("failure-policy",),)
