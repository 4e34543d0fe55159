"""What a learner does on the fan-in, as the benchmarks replay it: the
widget's tour, the actions its `Step`s replay, in order, from the scenario as
it lands, after a Reset. Walked again and again, that is 2 Resets in 14
actions (the tour's last step starts again from a fresh scenario): the mix
a learner makes, not more of Reset, the dearest action, than the tour asks.

    WALK = ("reset", "complete-child", "redeliver", "claim", ...)
"""

from __future__ import annotations

from server.widgets import WIDGETS

WIDGET = "fanin"


def walk(widget: str = WIDGET) -> tuple[str, ...]:
    """Reset, then every action the widget's tour replays, in order."""
    slugs = ["reset"]
    for step in WIDGETS[widget].tour:
        for slug, body in step.replay:
            if body:  # the walk is sent as "{}" bodies (wrk, the load generators)
                raise ValueError(f"{widget}'s tour step {step.id} sends a body: {body}")
            slugs.append(slug)
    return tuple(slugs)


WALK = walk()


def describe(actions: tuple[str, ...] = WALK) -> str:
    """The mix in words, for the report: "the fan-in's tour, 2 resets in 14 actions"."""
    resets = actions.count("reset")
    return f"the fan-in's tour walked again and again, {resets} reset{'s' if resets != 1 else ''} in {len(actions)}"
