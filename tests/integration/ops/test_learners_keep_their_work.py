"""A learner's work outlives a killed Valkey and a restart of the site (issue 28, items 2 and 3):
the same cookie finds the same sandbox, its keys and its progress."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.integration.ops.serving import Serve, valkeys_of, wait_for

DIVE = "/flows/parent-and-children"


def learner(site: Serve, cookies: httpx.Cookies | None = None) -> httpx.Client:
    return httpx.Client(base_url=site.url, timeout=10, cookies=cookies)


def checklist(client: httpx.Client) -> list[str]:
    answer = client.get("/api/widgets/fanin/state")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["snapshot"]["progress"]["reached"])


def test_after_a_kill_9_of_valkey_an_action_answers_200_within_10_s_and_progress_is_kept(tmp_path: Path) -> None:
    with Serve(tmp_path) as site:
        assert site.proc is not None
        client = learner(site)
        assert client.get(DIVE).status_code == 200
        assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        assert checklist(client) == ["counted"]
        time.sleep(1.2)  # appendfsync everysec: the last second may be lost by a kill, as Valkey documents
        [pid] = valkeys_of(site.proc.pid)
        killed_at = time.monotonic()
        os.kill(pid, signal.SIGKILL)

        def acts() -> bool:
            try:
                return client.post("/api/widgets/fanin/claim", json={}).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(acts, 10, "an action answering 200 after the kill")
        assert time.monotonic() - killed_at < 10  # a liveness bound
        assert checklist(client)[:1] == ["counted"]
        snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
        assert snap["readout"].startswith("1 of 3 children complete")


def test_a_restart_of_the_site_on_its_data_directory_keeps_the_sandbox_and_its_progress(tmp_path: Path) -> None:
    site = Serve(tmp_path)
    with site:
        client = learner(site)
        assert client.get(DIVE).status_code == 200
        for _ in range(2):
            assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        cookies = client.cookies
        time.sleep(1.2)  # the append-only file is written every second
    assert site.stop() == 0
    again = Serve(tmp_path, data_dir=site.data_dir)
    with again:
        client = learner(again, cookies)
        assert checklist(client) == ["counted"]
        snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
        assert snap["readout"].startswith("2 of 3 children complete")
        assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        assert "released" in checklist(client)


TOKEN = "a-class-token-of-twenty-chars"


def test_a_restart_keeps_the_class_its_learners_and_the_instructors_sign_in(tmp_path: Path) -> None:
    site = Serve(tmp_path, env={"EMQLAB_INSTRUCTOR_TOKEN": TOKEN})
    with site:
        teacher = learner(site)
        assert teacher.get("/").status_code == 200
        assert teacher.post("/instructor/sign-in", data={"token": TOKEN}).status_code in (200, 303)
        opened = teacher.post("/instructor/rooms", json={"name": "Tuesday flows"})
        assert opened.status_code == 201, opened.text
        code = opened.json()["room"]["code"]
        pupil = learner(site)
        assert pupil.get(DIVE).status_code == 200
        joined = pupil.post("/room/join", json={"code": code, "name": "Ada"}, headers={"Accept": "application/json"})
        assert joined.status_code == 200, joined.text
        assert pupil.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        teacher_cookies, pupil_cookies = teacher.cookies, pupil.cookies
        time.sleep(1.2)  # the append-only file is written every second
    assert site.stop() == 0
    again = Serve(tmp_path, data_dir=site.data_dir, env={"EMQLAB_INSTRUCTOR_TOKEN": TOKEN})
    with again:
        teacher, pupil = learner(again, teacher_cookies), learner(again, pupil_cookies)
        roster = teacher.get(f"/instructor/rooms/{code}/roster.json")
        assert roster.status_code == 200, roster.text  # the sign-in outlived the restart
        body = roster.json()
        assert body["code"] == code and [row["name"] for row in body["learners"]] == ["Ada"]
        assert body["learners"][0]["progress"]  # the learner's record came back with the class
        assert "Tuesday flows" in teacher.get(f"/instructor/rooms/{code}").text
        # the learner is still in the class: their answers are the class's
        assert pupil.get("/room").status_code == 200 and code in pupil.get("/room").text
