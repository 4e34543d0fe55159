"""The course's own scripts pass every check; each starter fails the checks that need the learner.

Checks are scenarios on a real grading Valkey: these tests send whole
scripts through ``grade`` exactly as the web layer will, and read the
verdicts and the key pictures that come back.
"""

from __future__ import annotations

import pytest

from server.emq import keyspace
from server.exercises import GraderPool, catalogue, grade
from server.widgets import WIDGETS
from tests.contract import CONSOLE_WORDS
from tests.integration.exercises.support import COURSE, sandbox

REGION_WORDS = (*(w.design.region for w in WIDGETS.values()), CONSOLE_WORDS)


@pytest.mark.parametrize("name", catalogue.names())
async def test_the_course_script_as_listed_passes_every_check(pool: GraderPool, name: str) -> None:
    graded = await grade(pool, name, COURSE[name], run_for=sandbox())
    assert graded.failed() == [], [c.said for c in graded.checks if not c.passed]
    assert graded.passed == graded.total == len(catalogue.get(name).checks)
    body = graded.as_json()
    assert body["pictures"] == []  # pictures frame failures only
    for check in body["checks"]:  # type: ignore[attr-defined]
        assert set(check) == {"name", "passed", "said"}
        assert check["said"] and check["said"].count(". ") == 0  # one sentence, also when it passes


@pytest.mark.parametrize("name", catalogue.names())
async def test_the_starter_fails_every_check_that_needs_the_learners_part(pool: GraderPool, name: str) -> None:
    exercise = catalogue.get(name)
    graded = await grade(pool, name, exercise.starter, run_for=sandbox())
    for check in exercise.learner_checks:
        assert not graded.check(check).passed, f"{name}: the starter passed {check!r}"
    # the parts the starter carries are the course's own, so the rest pass
    assert set(graded.failed()) == exercise.learner_checks


async def test_a_failing_check_says_what_valkey_holds_and_pictures_the_keys_around_the_call(pool: GraderPool) -> None:
    graded = await grade(pool, "redelivery", catalogue.get("redelivery").starter, run_for=sandbox())
    late = graded.check("a completion after the lease lapsed")
    assert late.said.startswith("expected :dependencies = 1, Valkey holds 0 after the late completion of JOBpart3")
    assert late.before is not None and late.after is not None
    deps = [shot for shot in late.after.keys if shot.name.endswith("job:JOBreport:dependencies")]
    assert [(shot.type, shot.value) for shot in deps] == [("string", "0")]
    assert late.before.text(deps[0].name) == "1"
    pictures = graded.as_json()["pictures"]
    assert [p["check"] for p in pictures] == ["a completion after the lease lapsed"]  # type: ignore[index]
    drawn = {key["name"]: key for key in pictures[0]["after"]}  # type: ignore[index]
    # drawn as the course writes keys, not under the grader's run queue
    assert drawn["emq:{q}:job:JOBreport:dependencies"] == {
        "name": "emq:{q}:job:JOBreport:dependencies", "type": "string", "value": "0", "size": 1, "whole": True}


async def test_a_runs_sentences_and_pictures_write_its_queues_as_the_course_does(pool: GraderPool) -> None:
    # a deliver that writes a stray key on each slot: the sentence names it, the pictures show every key
    stray = COURSE["deliver"].replace("local child_id = ARGV[1]", "redis.call('SET', ARGV[4] .. 'stray', 1)\n"
                                      "redis.call('SET', KEYS[3] .. ':stray', 1)\nlocal child_id = ARGV[1]", 1)
    graded = await grade(pool, "deliver", stray, run_for=sandbox())
    said = graded.check("a missing parent").said
    assert "emq:{pq}:" in said and "{r" not in said, said
    body = graded.as_json()
    names = [key["name"] for p in body["pictures"] for side in ("before", "after")  # type: ignore[attr-defined]
             for key in p[side]]
    assert names and all(name.startswith(("emq:{q}:", "emq:{pq}:")) for name in names), names
    assert "emq:{pq}:job:JOBorder1" in names and "emq:{q}:job:JOBmail1" in names
    assert "{r" not in str(body)  # no run queue anywhere, values included


async def test_every_key_of_a_run_lives_in_the_runs_own_hashtag(pool: GraderPool) -> None:
    graded = await grade(pool, "deliver", catalogue.get("deliver").starter, run_for=sandbox())
    check = graded.check("three children")
    assert check.after is not None
    tags = {keyspace.hash_slot(name) for name in check.after.names()}
    runs = {name.split("{", 1)[1].split(".", 1)[0] for name in check.after.names()}
    assert len(runs) == 1 and next(iter(runs)).startswith("r")
    assert len(tags) == 2  # the parent's queue and the mail queue: two slots, one run


def test_each_exercise_describes_itself_as_the_page_asks() -> None:
    for name in catalogue.names():
        shown = catalogue.get(name).as_json()
        assert set(shown) == {"name", "title", "task", "starter", "checks"}
        assert shown["name"] == name
        title = str(shown["title"]).lower()
        assert not any(word in title for word in REGION_WORDS), title
        assert str(shown["starter"]).startswith("-- ")
        assert "@include" not in str(shown["starter"])  # the helpers are pasted in, as the listings show them
        assert shown["checks"] == [check.name for check in catalogue.get(name).checks]
