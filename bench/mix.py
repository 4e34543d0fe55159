"""What a learner does on the fan-in, as the benchmarks replay it.

A learner walks the widget's tour: the actions its `Step`s replay, in
order, from the scenario as it lands. The walk of the fan-in is thirteen
actions, one of them a Reset (the tour's last step starts again from a
fresh scenario); the benchmarks put a Reset before it, so a learner who
walks it again and again does 2 Resets in 14 actions. (The previous rounds'
mix was 1 Reset : 3 "Complete child", a Reset in every 4: twice what the
tour asks, and Reset is the dearest action, landing the scenario again.)

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
