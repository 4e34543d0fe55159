"""The grader line's turns and shares by address (server/exercises/fair_line.py), without a grader."""

from __future__ import annotations

import pytest

from server.exercises import QueueFull
from server.exercises.fair_line import FairLine


def served(line: FairLine[str]) -> list[str]:
    order = []
    while (item := line.pop()) is not None:
        order.append(item)
    return order


def test_a_newcomer_address_is_served_next_however_many_runs_another_address_queued() -> None:
    line: FairLine[str] = FairLine(bound=32, per_address=16)
    for n in range(10):
        line.push("10.0.0.1", f"a{n}")
    assert line.pop() == "a0"
    line.push("10.0.0.2", "b0")
    assert list(line)[:2] == ["b0", "a1"]  # next, ahead of the nine runs already waiting
    assert served(line) == ["b0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"]


def test_two_busy_addresses_take_turns_and_each_keeps_its_own_order() -> None:
    line: FairLine[str] = FairLine(bound=32, per_address=16)
    for n in range(3):
        line.push("A", f"a{n}")
    for n in range(3):
        line.push("B", f"b{n}")
    line.push(None, "site")
    assert served(line) == ["a0", "b0", "site", "a1", "b1", "a2", "b2"]


def test_one_address_holds_at_most_its_share_of_places_and_gets_them_back_as_runs_end() -> None:
    line: FairLine[str] = FairLine(bound=32, per_address=2)
    line.admit("A")
    line.admit("A")
    with pytest.raises(QueueFull, match="Runs from your network already hold 2 places"):
        line.admit("A")
    line.admit("B")  # another address is not held back
    line.release("A")
    line.admit("A")
    for _ in range(40):
        line.admit(None)  # no address, no share (a bench, the site's own callers)
    assert line.held == {"A": 2, "B": 1}


def test_a_run_that_stops_waiting_leaves_the_line_and_its_address_keeps_no_turns() -> None:
    line: FairLine[str] = FairLine(bound=2, per_address=16)
    line.push("A", "a0")
    line.push("A", "a1")
    assert line.full() and "a1" in line
    assert line.remove("a1") and not line.remove("a1") and "a1" not in line
    assert served(line) == ["a0"] and len(line) == 0
