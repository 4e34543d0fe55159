"""The race in a class: a demo's learners watch the instructor's run; together the class
races on its one shared sandbox (one run at a time there); in its own sandboxes each
learner races on their own. Real Valkey, the real site, the class made as the join makes it."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from server.emq import keyspace
from server.sandboxes import keys
from server.valkey.process import ValkeyProcess
from server.web.guards import DEMO_REFUSAL
from server.widgets.race_run import PARENT
from tests.integration import classes_direct
from tests.integration.test_widget_race import running_now
from tests.support import LiveSite, running, sandbox_of, streaming

PAGE = "/flows/under-fire"
LONG = {"workers": 2, "children": 16, "faults": ["lapse"], "early_release": False}  # a run that lasts a while


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_SECRET": classes_direct.SECRET}) as live:
        yield live


def run(client: httpx.Client, seed: int, **more: object) -> httpx.Response:
    return client.post("/api/widgets/race/run", json={**LONG, "seed": seed, **more}, timeout=20)


def picture(client: httpx.Client) -> dict[str, Any]:
    found = client.get("/api/widgets/race/state").json()["snapshot"]["picture"]
    assert isinstance(found, dict)
    return found


def race_rows(site: LiveSite, sandbox: str) -> int:
    """How many answers a run left on the timeline of `sandbox`'s race (0: no run there)."""
    return sum(1 for f in site.redis().hkeys(keys.state_key(f"{sandbox}.race")) if f.startswith("race:t:"))


def test_in_demo_mode_the_learners_page_sees_the_instructors_run_and_the_learners_run_is_refused(
        site: LiveSite) -> None:
    instructor, learner = site.visitor(PAGE), site.visitor(PAGE)
    classes_direct.enrol(site, [learner], mode="demo", host=instructor)
    with streaming(learner, widgets="race", page=PAGE) as events:
        events.until("widget")  # the page's first paint: the instructor's sandbox
        acting = threading.Thread(target=lambda: run(instructor, 11))
        acting.start()
        frames = [d for e, d in events.until("widget", timeout=20, where=lambda d: 'data-status="done"' in d["html"]
                                             and 'race-seed-shown">11<' in d["html"]) if e == "widget"]
        acting.join(20)
    assert any('data-status="running"' in f["html"] for f in frames), "the learner never saw the run going"
    shown = picture(learner)
    assert shown["status"] == "done" and shown["seed"] == 11 and shown["timeline"]
    assert len(re.findall(r"<tr data-op=", frames[-1]["html"])) == len(shown["timeline"])
    refused = run(learner, 12)
    assert refused.status_code == 403 and refused.json()["error"] == DEMO_REFUSAL
    assert picture(learner)["seed"] == 11  # nothing written: the instructor's run still shows
    assert race_rows(site, sandbox_of(learner)) == 0  # and the learner's own sandbox never raced


def test_together_the_class_races_on_its_shared_sandbox_one_run_at_a_time(site: LiveSite) -> None:
    ada, grace = site.visitor(PAGE), site.visitor(PAGE)
    code = classes_direct.enrol(site, [ada, grace], mode="together")
    shared = site.redis().hget(f"lab:room:{code}", "sandbox")
    answers: list[httpx.Response] = []
    acting = threading.Thread(target=lambda: answers.append(run(ada, 21)))
    acting.start()
    running_now(grace)  # Grace's page reads Ada's run going
    second = run(grace, 22)
    assert second.status_code == 409 and "still going" in second.json()["error"]
    acting.join(20)
    assert answers and answers[0].status_code == 200, answers
    shown = picture(grace)
    assert shown["status"] == "done" and shown["seed"] == 21
    # the run's flow is the class's: in the shared sandbox, in neither learner's own
    assert site.redis().hget(keyspace.job_key(f"{shared}.race", PARENT), "state") is not None
    assert race_rows(site, shared) == len(shown["timeline"])
    assert race_rows(site, sandbox_of(ada)) == race_rows(site, sandbox_of(grace)) == 0


def test_in_own_sandboxes_two_learners_of_a_class_race_at_once_each_on_their_own(site: LiveSite) -> None:
    ada, grace = site.visitor(PAGE), site.visitor(PAGE)
    classes_direct.enrol(site, [ada, grace])
    answers: dict[str, httpx.Response] = {}
    threads = [threading.Thread(target=lambda who=who, client=client, seed=seed: answers.__setitem__(
        who, run(client, seed, children=6))) for who, client, seed in (("ada", ada, 31), ("grace", grace, 32))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert {who: a.status_code for who, a in answers.items()} == {"ada": 200, "grace": 200}
    assert picture(ada)["seed"] == 31 and picture(grace)["seed"] == 32
    for client in (ada, grace):
        assert race_rows(site, sandbox_of(client)) == len(picture(client)["timeline"])
