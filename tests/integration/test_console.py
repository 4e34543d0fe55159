"""The console over HTTP (POST/GET /api/console) on the real site.

What a line may do is the console's own business, tested on the Valkey
boundary (tests/integration/boundary: every line runs as the sandbox's ACL
user). Here: what the web adds in front of it — the Origin and the signed
cookie, a body that is one command and nothing else, the transcript kept in
Valkey for a reload, the rates, a class's demo mode — and what a write does
to the widgets (its key shown and reset by its widget; the repaint of open
pages is in test_live_stream.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from server.valkey.process import ValkeyProcess
from server.web.guards import DEMO_REFUSAL
from tests.integration import classes_direct
from tests.support import LiveSite, running, sandbox_of

READ = "GET emq:{fanin}:job:JOBparent:dependencies"


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_SECRET": classes_direct.SECRET}) as live:
        yield live


def run(client: httpx.Client, command: str) -> dict[str, Any]:
    answer = client.post("/api/console", json={"command": command})
    assert answer.status_code == 200, (command, answer.text)
    body: dict[str, Any] = answer.json()
    assert body["command"] == command
    return body


def everything(r: redis.Redis) -> dict[Any, Any]:
    return {key: r.dump(key) for key in r.scan_iter(count=1000)}


def test_a_line_from_another_site_or_without_a_sandbox_cookie_is_refused_and_runs_nothing(site: LiveSite) -> None:
    caller = site.visitor()
    assert caller.get("/api/widgets/fanin/state").status_code == 200
    raw = redis.Redis.from_url(site.valkey_url)
    before = everything(raw)
    for origin in ("https://evil.example", "null", site.url.replace("http://", "https://")):
        answer = caller.post("/api/console", json={"command": "DEL emq:{fanin}:pending"}, headers={"Origin": origin})
        assert answer.status_code == 403 and "cross-site" in answer.json()["error"], origin
    cross = caller.post("/api/console", json={"command": "PING"}, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross.status_code == 403
    with site.client() as stranger:
        for answer in (stranger.post("/api/console", json={"command": "PING"}), stranger.get("/api/console")):
            assert answer.status_code == 403 and "open a page of the course first" in answer.json()["error"]
    assert everything(raw) == before
    assert caller.post("/api/console", json={"command": "PING"}, headers={"Origin": site.url}).status_code == 200


@pytest.mark.parametrize(("body", "said"), [
    (b"{}", "command"),
    (b'{"command": 5}', "(its command)"),
    (b'{"command": ["GET", "x"]}', "(its command)"),
    (b'{"command": "PING", "sandbox": "s0123456789"}', "sandbox"),
    (b'{"command": "' + b"k" * 9000 + b'"}', "(its command)"),
    (b"{", "not JSON"),
    (b'["PING"]', "does not fit"),
])
def test_a_body_that_is_not_one_command_is_a_400_naming_what_is_wrong(site: LiveSite, body: bytes, said: str) -> None:
    caller = site.visitor()
    answer = caller.post("/api/console", content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 400 and said in answer.json()["error"], answer.text


def test_a_body_past_the_size_cap_is_refused_unread(site: LiveSite) -> None:
    caller = site.visitor()
    answer = caller.post("/api/console", content=b'{"command": "' + b"x" * 40_000 + b'"}')
    assert answer.status_code == 413


def test_the_transcript_is_kept_in_valkey_for_a_reload_and_is_each_visitors_own(site: LiveSite) -> None:
    mine, theirs = site.visitor(), site.visitor()
    assert mine.get("/api/widgets/fanin/state").status_code == 200
    assert run(mine, READ)["reply_lines"] == ['"3"']
    refused = mine.post("/api/console", json={"command": "FLUSHALL"})
    assert refused.status_code == 403 and refused.json()["kind"] == "refused"
    kept = mine.get("/api/console").json()["transcript"]
    assert kept[-2] == {"command": READ, "reply_lines": ['"3"'], "kind": "reply"}
    assert kept[-1]["command"] == "FLUSHALL" and kept[-1]["kind"] == "refused"
    assert theirs.get("/api/console").json()["transcript"] == []
    for i in range(25):
        run(mine, f"PING p{i}")
    kept = mine.get("/api/console").json()["transcript"]
    assert len(kept) == 20 and kept[-1]["command"] == "PING p24"


def test_a_key_the_console_writes_shows_in_its_widget_and_goes_with_the_widgets_reset(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    assert visitor.get("/api/widgets/fanin/state").status_code == 200
    assert run(visitor, "SET emq:{fanin}:my-note hello")["reply_lines"] == ["OK"]
    shown = visitor.get("/api/widgets/fanin/state").json()["snapshot"]["queues"][0]["keys"]
    assert {"name": "emq:{fanin}:my-note", "type": "string", "value": "hello"} in [
        {k: key[k] for k in ("name", "type", "value")} for key in shown]
    assert visitor.post("/api/widgets/fanin/reset", json={}).status_code == 200
    assert not site.redis().exists(f"emq:{{{sandbox}.fanin}}:my-note")


def test_rows_a_console_script_makes_under_new_ids_go_with_the_widgets_reset(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    assert visitor.get("/api/widgets/fanin/state").status_code == 200
    base = f"emq:{{{sandbox}.fanin}}:"
    for round_ in range(2):
        made = [f"JOBnew{round_}x{i}" for i in range(3)]
        for job in made:
            q = "emq:{fanin}:"
            run(visitor, f"hold_parent 2 {q}job:{job} {q}job:{job}:dependencies {job} p 3")
        assert all(site.redis().exists(f"{base}job:{job}", f"{base}job:{job}:dependencies") == 2 for job in made)
        assert visitor.post("/api/widgets/fanin/reset", json={}).status_code == 200
        left = list(site.redis().scan_iter(match=f"{base}job:JOBnew*", count=1000))
        assert left == [], left


def test_in_demo_mode_a_learner_reads_the_instructors_sandbox_but_every_write_is_refused(site: LiveSite) -> None:
    instructor, learner = site.visitor(), site.visitor()
    assert instructor.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    classes_direct.enrol(site, [learner], mode="demo", host=instructor)
    assert run(learner, READ)["reply_lines"] == ['"2"']  # the instructor's fan-in, not the learner's own
    raw = redis.Redis.from_url(site.valkey_url)
    before = {k: v for k, v in everything(raw).items() if k.startswith(b"emq:")}
    for command in ("SET emq:{fanin}:note x", "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000",
                    "DEL emq:{fanin}:pending"):
        answer = learner.post("/api/console", json={"command": command})
        assert answer.status_code == 403 and answer.json()["error"] == DEMO_REFUSAL, command
    assert {k: v for k, v in everything(raw).items() if k.startswith(b"emq:")} == before
    assert run(instructor, "SET emq:{fanin}:note x")["reply_lines"] == ["OK"]  # the demo's host still writes


def test_console_lines_spend_the_action_budget_and_the_transcript_the_read_budget() -> None:
    env = {"EMQLAB_RATE_LIMIT": "3", "EMQLAB_READ_LIMIT": "2"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as limited:
        client = limited.visitor()
        codes = [client.post("/api/console", json={"command": "PING"}).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        assert "too many actions" in client.post("/api/console", json={"command": "PING"}).json()["error"]
        reads = [client.get("/api/console").status_code for _ in range(3)]
        assert reads == [200, 200, 429]
