"""Kept work on the real site: a learner's last script and best run per exercise
live in their sandbox's records in Valkey, come back with the exercise
(`GET /api/exercises/<name>` → `mine`) and on its own page, and go at "Start over"."""

from __future__ import annotations

import httpx

from server.sandboxes import keys
from tests.integration.exercises.support import COURSE, variant
from tests.support import LiveSite, sandbox_of


def mine(client: httpx.Client, name: str = "fan-in") -> dict[str, object]:
    answer = client.get(f"/api/exercises/{name}")
    assert answer.status_code == 200, answer.text
    found: dict[str, object] = answer.json()["mine"]
    return found


def run(client: httpx.Client, script: str, name: str = "fan-in") -> httpx.Response:
    return client.post(f"/api/exercises/{name}/run", json={"script": script}, timeout=20)


def test_a_learner_who_never_ran_an_exercise_has_no_script_and_no_best(clean: LiveSite) -> None:
    assert mine(clean.visitor()) == {"script": None, "best": None}


def test_the_last_script_is_kept_and_the_best_run_never_falls(clean: LiveSite) -> None:
    client = clean.visitor()
    right = run(client, COURSE["fan-in"]).json()
    assert right["passed"] == right["total"] == 8
    wrong = variant("fanin_release_unchecked")
    assert run(client, wrong).json()["passed"] == 6
    # the script is the last one run; the best is the 8 of 8 before it
    assert mine(client) == {"script": wrong, "best": {"passed": 8, "total": 8}}
    # per exercise: the other exercises keep nothing of this one
    assert mine(client, "deliver") == {"script": None, "best": None}
    work = clean.redis().hgetall(keys.work_key(sandbox_of(client)))
    assert work == {"fan-in": wrong}
    assert 0 < clean.redis().ttl(keys.work_key(sandbox_of(client))) <= 7200


def test_a_refused_script_changes_nothing_kept(clean: LiveSite) -> None:
    client = clean.visitor()
    assert run(client, COURSE["fan-in"]).status_code == 200
    valkey, sandbox = clean.redis(), sandbox_of(client)
    kept = [valkey.dump(keys.work_key(sandbox)), valkey.dump(keys.progress_key(sandbox))]
    assert run(client, "return ((").status_code == 422
    assert run(client, "-- " + "x" * 16_400).status_code == 413
    assert [valkey.dump(keys.work_key(sandbox)), valkey.dump(keys.progress_key(sandbox))] == kept


def test_another_learner_sees_none_of_it(clean: LiveSite) -> None:
    learner, other = clean.visitor(), clean.visitor()
    assert run(learner, COURSE["fan-in"]).status_code == 200
    assert mine(other) == {"script": None, "best": None}


def test_the_exercises_own_page_opens_with_the_last_script_and_the_best_run(clean: LiveSite) -> None:
    client = clean.visitor()
    fresh = client.get("/exercises/fan-in")
    assert fresh.status_code == 200 and "YOUR PART" in fresh.text and "Your best run" not in fresh.text
    script = COURSE["fan-in"].replace("-- complete:", "-- my complete:", 1)
    assert run(client, script).status_code == 200
    page = client.get("/exercises/fan-in").text
    assert "-- my complete:" in page and "Your best run: 8 of 8 checks passed." in page
    assert client.get("/exercises/nope").status_code == 404


def test_start_over_asks_first_then_forgets_the_scripts_and_the_best_runs(clean: LiveSite) -> None:
    client = clean.visitor()
    assert run(client, COURSE["fan-in"]).status_code == 200
    asked = client.post("/progress/start-over", data={}, follow_redirects=False)
    assert asked.status_code == 303 and asked.headers["location"] == "/progress?confirm=start-over"
    assert mine(client)["script"] == COURSE["fan-in"]  # asking changes nothing
    done = client.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303
    assert mine(client) == {"script": None, "best": None}
    assert not clean.redis().exists(keys.work_key(sandbox_of(client)))
