"""Seven wrong scripts, each a mistake a learner makes, each failing the check that names it."""

from __future__ import annotations

import pytest

from server.exercises import GraderPool, grade
from tests.integration.exercises.support import sandbox, variant

# variant file → (exercise, the check that names its mistake, what that check says)
MISTAKES = {
    "fanin_outside_guard": ("fan-in", "a completion after the lease lapsed",
                            "expected :dependencies = 1, Valkey holds 0 after the late completion of JOBpart3"),
    "fanin_no_release": ("fan-in", "the last child",
                         "expected the parent released (state pending, in pending), Valkey holds the parent "
                         "with state awaiting_children, in no state set after the completion of JOBpart3"),
    "fanin_release_unchecked": ("fan-in", "a parent already failed",
                                "expected the parent failed (state failed, in dead), Valkey holds the parent with "
                                "state pending, in pending and dead after the completion of JOBpart3, the last "
                                "child, after the parent had failed: only a parent still held (awaiting_children) "
                                "is released, and this one had failed already"),
    "fanin_before_fence": ("fan-in", "a stale token",
                           "expected nothing to change, Valkey holds"),
    "deliver_hset": ("deliver", "a crash before trim",
                     "expected :dependencies = 2, Valkey holds 1 after the second delivery of JOBmail1"),
    "deliver_decr_on_duplicate": ("deliver", "a crash before trim",
                                  "expected :dependencies = 2, Valkey holds 1 after the second delivery of JOBmail1"),
    "deliver_release_twice": ("deliver", "released once",
                              "expected the parent to stay with the worker that claimed it (state active, in active "
                              "only), Valkey holds the parent with state pending, in pending and active"),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
async def test_a_wrong_variant_fails_the_check_that_names_its_mistake(pool: GraderPool, name: str) -> None:
    exercise, check, said = MISTAKES[name]
    graded = await grade(pool, exercise, variant(name), run_for=sandbox())
    verdict = graded.check(check)
    assert not verdict.passed
    assert verdict.said.startswith(said), verdict.said
    # the key pictures around the call that went wrong come with it
    assert verdict.before is not None and verdict.after is not None and verdict.before != verdict.after


async def test_a_variant_that_only_counts_too_often_still_passes_the_checks_it_gets_right(pool: GraderPool) -> None:
    graded = await grade(pool, "deliver", variant("deliver_release_twice"), run_for=sandbox())
    assert graded.failed() == ["released once"]


async def test_a_fan_in_that_releases_without_looking_at_the_parent_fails_only_the_two_checks_that_name_why(
        pool: GraderPool) -> None:
    graded = await grade(pool, "fan-in", variant("fanin_release_unchecked"), run_for=sandbox())
    assert graded.failed() == ["a parent already failed", "a parent already released"]
    released = graded.check("a parent already released")
    assert released.said.startswith("expected the parent to stay with the worker that claimed it (state active, "
                                    "in active only), Valkey holds the parent with state pending, in pending and "
                                    "active"), released.said
    assert released.said.endswith("this one was released and claimed already")
