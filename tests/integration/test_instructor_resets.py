"""The instructor's resets from /instructor, on the real site and a real Valkey:
one sandbox, a class, or all; exactly those keys, the scenario landed again,
open pages told, and the learner's own record left as it was."""

from __future__ import annotations

import httpx

from tests.e2e.rooms import joined, open_class, own_sandbox
from tests.support import Events, LiveSite, deps


def counter(site: LiveSite, sandbox: str) -> str | None:
    """The fan-in parent's counter as Valkey holds it (3 once landed afresh)."""
    value = site.redis().get(f"emq:{{{sandbox}.fanin}}:job:JOBparent:dependencies")
    return None if value is None else str(value)


def keys_of(site: LiveSite, sandbox: str) -> dict[str, object]:
    r = site.redis()
    return {k: r.dump(k) for k in r.scan_iter(f"*{sandbox}*")}


def learner_of(site: LiveSite, code: str, name: str) -> tuple[httpx.Client, str]:
    client = joined(site, code, name)
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    return client, own_sandbox(site, code, name)


def test_a_reset_of_one_sandbox_lands_its_scenario_again_and_leaves_every_other_key(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, first = learner_of(clean, code, "Ada")
    _, second = learner_of(clean, code, "Grace")
    before = keys_of(clean, second)
    record = clean.redis().hgetall(f"lab:{{{first}}}:progress")
    answer = instructor.post("/instructor/reset", json={"sandbox": first})
    assert answer.status_code == 200 and answer.json()["message"] == f"Sandbox {first} (Ada) was reset."
    assert counter(clean, first) == "3" and counter(clean, second) == "2"
    assert keys_of(clean, second) == before
    assert clean.redis().hgetall(f"lab:{{{first}}}:progress") == record  # her record stays hers
    outcome = ada.get("/api/widgets/fanin/state").json()["snapshot"]["outcome"]
    assert outcome["by"] == "instructor" and outcome["action"] == "reset"


def test_a_reset_of_a_class_and_of_all_reset_their_sandboxes_and_nothing_else(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    _, member = learner_of(clean, code, "Ada")
    alone = clean.visitor()
    alone.post("/api/widgets/fanin/complete-child", json={})
    r = clean.redis()
    r.set("someone-else:key", "kept")
    assert instructor.post("/instructor/reset", json={"room": code.lower()}).status_code == 200
    assert counter(clean, member) == "3"
    assert alone.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"] == 2
    answer = instructor.post("/instructor/reset", json={"all": True})
    assert answer.status_code == 200 and answer.json()["failed"] == {}
    assert alone.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"] == 3
    assert r.get("someone-else:key") == "kept" and r.exists(f"lab:room:{code}")  # the class stays open


def test_a_reset_reaches_the_learner_open_stream_which_sends_the_scenario_again(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada, sandbox = learner_of(clean, code, "Ada")
    with ada.stream("GET", "/api/stream?widgets=fanin", timeout=15) as response:
        events = Events(response)
        assert deps(events.until("widget")[-1][1]) == 2
        assert instructor.post("/instructor/reset", json={"sandbox": sandbox}).status_code == 200
        reset = events.until("reset")[-1][1]
        assert reset["by"] == "instructor" and "Your sandbox was reset by the instructor" in reset["html"]
        assert deps(events.until("widget")[-1][1]) == 3


def test_a_reset_form_without_javascript_redirects_back_with_a_notice(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    _, sandbox = learner_of(clean, code, "Ada")
    answer = instructor.post("/instructor/reset", data={"sandbox": sandbox})
    assert answer.status_code == 303 and answer.headers["location"] == "/instructor"
    assert f"Sandbox {sandbox} (Ada) was reset." in instructor.get("/instructor").text
    assert "was reset" not in instructor.get("/instructor").text  # a notice shown once
