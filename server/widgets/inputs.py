"""Reading an action's JSON body: each field checked, or a `BadInput` naming it.

A bad body is refused before anything is written, with a sentence a learner
(or whoever sent the request) can act on.
"""

from __future__ import annotations

from typing import Any

from server.widgets.outcome import BadInput


def flag(body: dict[str, Any], name: str, default: bool = False) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise BadInput(f"'{name}' must be true or false")
    return value


def whole(body: dict[str, Any], name: str, low: int, high: int) -> int:
    value = body.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadInput(f"'{name}' must be a whole number from {low} to {high}")
    return value


def choice(body: dict[str, Any], name: str, options: tuple[str, ...], default: str) -> str:
    value = body.get(name, default)
    if value not in options:
        raise BadInput(f"'{name}' must be one of: {', '.join(options)}")
    return str(value)


def tour_step_of(body: dict[str, Any], total: int) -> tuple[int, str]:
    """The step a deep link asks for, and a sentence when it asked past the end.

    A link to step 7 of a 6-step tour is not an error a learner can fix: it
    opens the last step and says so. Anything but a whole number >= 0 is refused.
    """
    step = whole(body, "step", 0, 10**6)
    if step <= total:
        return step, ""
    return total, f"This tour has {total} steps, so the link to step {step} opened the last one. "
