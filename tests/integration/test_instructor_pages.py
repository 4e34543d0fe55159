"""The instructor's views of learners, on the real site and a real Valkey:
Watch (read-only, and whom), the live sandboxes named by learner and class,
and a class that lives in Valkey, served alike by a second process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.e2e.rooms import DIVE, class_site, joined, open_class, own_sandbox
from tests.support import LiveSite


def dependencies(client: httpx.Client) -> int:
    return int(client.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"])


def complete(client: httpx.Client) -> dict[str, Any]:
    answer = client.post("/api/widgets/fanin/complete-child", json={})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def roster(instructor: httpx.Client, code: str) -> dict[str, Any]:
    answer = instructor.get(f"/instructor/rooms/{code}/roster.json")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_watch_shows_the_instructor_a_learner_read_only_and_says_whom(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    complete(ada)
    ada_id = own_sandbox(clean, code, "Ada")
    answer = instructor.get(f"/instructor/rooms/{code}/learners/{ada_id}/watch")
    assert answer.status_code == 303 and answer.headers["location"] == DIVE
    state = instructor.get("/api/widgets/fanin/state").json()
    assert state["room"]["readonly"] is True and state["room"]["watching"] == ada_id
    assert state["snapshot"]["picture"]["parent"]["dependencies"] == 2
    assert instructor.get("/instructor/watching").json() == {"sandbox": ada_id, "name": "Ada", "room": code}
    refused = instructor.post("/api/widgets/fanin/complete-child", json={})
    assert refused.status_code == 403 and "read-only" in refused.json()["error"]
    assert instructor.post("/instructor/watch/stop", json={}).status_code == 200
    assert dependencies(instructor) == 3


def test_the_instructor_page_lists_each_live_sandbox_with_its_learner_and_class(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    complete(joined(clean, code, "Ada"))
    sandbox = own_sandbox(clean, code, "Ada")
    listed = {row["id"]: row for row in instructor.get("/instructor/overview").json()["sandboxes"]}
    assert listed[sandbox]["name"] == "Ada" and listed[sandbox]["room"] == code
    assert listed[sandbox]["widget"] == "fanin"
    page = instructor.get("/instructor").text
    assert f'<tr data-sandbox="{sandbox}">' in page and f'href="/instructor/rooms/{code}">{code}</a>' in page


def test_the_class_lives_in_valkey_so_a_second_site_serves_the_same_class(clean: LiveSite) -> None:
    instructor, code = open_class(clean)
    ada = joined(clean, code, "Ada")
    instructor.post(f"/instructor/rooms/{code}/mode", json={"mode": "together"})
    complete(ada)
    secret = (Path(clean.env["EMQLAB_DATA_DIR"]) / "secret").read_text().strip()  # the same site, another process
    with class_site(clean.valkey_url, {"EMQLAB_SECRET": secret}) as other:
        moved = other.client(cookies=dict(ada.cookies))
        assert dependencies(moved) == 2
        seen = roster(other.instructor(), code)
        assert seen["mode"] == "together" and [r["name"] for r in seen["learners"]] == ["Ada"]
