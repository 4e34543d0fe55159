"""Every sentence a widget says starts upper-case: its readout after each step
of its tour, and the outcome of each step, read from a real Valkey."""

from __future__ import annotations

import re

import pytest

from server.widgets import WIDGETS
from server.widgets.base import Context

from .conftest import act

SANDBOX = "s0123456788"
# a plural noun after the number one ("1 completions", "1 keys")
ONE_PLURAL = re.compile(r"(?<![\d.])1 (keys|completions|entries|children|flows|ticks|jobs|moves|steps)\b")


def _starts_upper(text: str) -> bool:
    return not text[:1].islower()


@pytest.mark.parametrize("name", list(WIDGETS))
async def test_every_readout_and_outcome_of_the_tour_starts_upper_case_and_counts_one_in_the_singular(
    conn, name
) -> None:
    widget, ctx = WIDGETS[name], Context(conn, SANDBOX)
    await widget.show(ctx)
    said = [(await widget.snapshot(ctx))["readout"]]
    for entry in widget.tour:
        slug, body = widget.tour_step(entry)
        outcome = await act(widget, ctx, slug, body)
        if outcome.keep:
            await widget.remember(ctx, **outcome.keep)
        said += [outcome.text, (await widget.snapshot(ctx))["readout"]]
    lower = [s for s in said if s and not _starts_upper(s)]
    assert lower == []
    assert [s for s in said if ONE_PLURAL.search(s)] == []
