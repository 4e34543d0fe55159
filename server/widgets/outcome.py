"""What one action did, and the errors an action raises instead.

An `Outcome` is the sentence a page announces and the data beside it. Its
sentence may name values the action left in Valkey (`Reading`): the step
that records the outcome (`queue_keys.lua`, mode `finish`) reads them and
writes them into the sentence, so the words say what Valkey held when the
action ended, and the action needs no read-back round trip of its own.

The errors are the domain's, never HTTP's: `server/web/errors.py` maps each
to its status.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

OutcomeKind = Literal["ok", "refused", "info"]


class BadInput(ValueError):
    """A request body a widget action cannot accept (answered with a 400)."""


class Busy(Exception):
    """Another action of this widget held the lock for too long (answered with a 503)."""


class TooManyKeys(Exception):
    """The widget's queues hold more keys than its cap (answered with a 409)."""


class Refusal(Exception):
    """An action the scenario cannot take now (a cap reached, no cluster):
    nothing was written; answered with a 409 and this sentence."""


@dataclass(frozen=True)
class Reading:
    """One value an outcome names, read by the step that records it.

    `command` is a read of one key of the widget's first queue (GET, HGET,
    ZSCORE, ZCARD, SCARD, LLEN, HLEN or EXISTS); `words` turns a value into
    a phrase ("pending" -> "the parent is released into pending"). In the
    outcome's text `{{name}}` stands for the value (or its words); a detail
    value "{{=name}}" becomes the bare value, a number or null.
    """

    command: tuple[str, ...]
    words: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"cmd": list(self.command), "words": self.words or {}}


@dataclass
class Outcome:
    """What one action did, in words (announced) and in data."""

    text: str
    kind: OutcomeKind = "ok"
    detail: dict[str, Any] = field(default_factory=dict)
    # Lab-state fields the action wants kept, written with the outcome in the
    # action's last round trip (instead of a `remember` round trip of its own).
    keep: dict[str, Any] = field(default_factory=dict)
    # The values its sentence names, read when the outcome is recorded.
    reads: dict[str, Reading] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"text": self.text, "kind": self.kind, "detail": self.detail}

    def readings_json(self) -> str:
        """`queue_keys.lua`'s ARGV for the readings ('' when there are none)."""
        return json.dumps({name: r.as_json() for name, r in self.reads.items()}) if self.reads else ""

    def settle(self, recorded: dict[str, Any] | None) -> None:
        """Take the sentence and data as Valkey recorded them (readings filled in)."""
        if recorded is not None:
            self.text = str(recorded.get("text", self.text))
            detail = recorded.get("detail")
            self.detail = detail if isinstance(detail, dict) else self.detail
        self.reads = {}


def encoded(fields: dict[str, Any]) -> dict[str, str]:
    """Lab-hash fields as strings: text as it is, anything else as JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in fields.items()}


def json_or_none(raw: str | None) -> dict[str, Any] | None:
    """A JSON object stored in the lab hash, or None when absent or broken."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
