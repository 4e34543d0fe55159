"""Predictions and progress through the real site: the API, /progress, Start over, expiry."""

from __future__ import annotations

import asyncio

import httpx
import redis.asyncio as aioredis

from server.sandboxes import lifecycle
from server.sandboxes.progress import progress_key
from tests.support import LiveSite, sandbox_of


def complete(client: httpx.Client, answer: object) -> httpx.Response:
    body = {"predict": {"question": "fanin-dependencies", "answer": answer}}
    return client.post("/api/widgets/fanin/complete-child", json=body)


def test_an_action_carries_its_verdict_and_the_learners_record(site: LiveSite) -> None:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").json()["snapshot"]["question"]["id"] == "fanin-dependencies"
    answer = complete(client, 2).json()
    assert answer["outcome"]["text"].startswith("Right: Valkey now holds :dependencies = 2.")
    assert answer["outcome"]["detail"]["progress"]["reached"] == 1
    record = site.redis().hgetall(progress_key(sandbox_of(client)))
    assert {k: record[k] for k in ("at:fanin", "reached:fanin", "steps:fanin", "asked:fanin", "right:fanin")} == {
        "at:fanin": "1", "reached:fanin": "1", "steps:fanin": "11", "asked:fanin": "1", "right:fanin": "1"}
    assert record["verdict:fanin"].startswith("Right")


def test_a_malformed_prediction_is_a_400_naming_the_field_and_writes_nothing(site: LiveSite) -> None:
    client = site.visitor()
    client.get("/api/widgets/fanin/state")
    sandbox = sandbox_of(client)
    valkey = site.redis()
    before = {k: valkey.dump(k) for k in sorted(valkey.scan_iter(match=f"emq:{{{sandbox}*"))}
    for bad, field in ((["2"], "'predict.answer'"), ("two", "'predict.answer'"), ({"a": 1}, "'predict.answer'")):
        answer = complete(client, bad)
        assert answer.status_code == 400 and field in answer.json()["error"], answer.text
    refused = client.post(
        "/api/widgets/fanin/redeliver", json={"predict": {"question": "fanin-dependencies", "answer": 2}}
    )
    assert refused.status_code == 400 and "'predict.question'" in refused.json()["error"]
    assert {k: valkey.dump(k) for k in sorted(valkey.scan_iter(match=f"emq:{{{sandbox}*"))} == before
    assert not valkey.exists(progress_key(sandbox))


def test_the_progress_page_and_its_json_show_the_record_per_sandbox(site: LiveSite) -> None:
    one, two = site.visitor(), site.visitor()
    one.get("/api/widgets/fanin/state")
    complete(one, 9)
    page = one.get("/progress")
    assert page.status_code == 200 and "Not quite: you said 9" in page.text and "Start over" in page.text
    mine = one.get("/api/progress").json()
    assert mine["widgets"]["fanin"] | {"verdict": ""} == {
        "widget": "fanin", "steps": 11, "reached": 1, "done": False, "asked": 1, "right": 0, "verdict": "",
        "summary": "1 of 11 tour steps reached; 0 of 1 prediction right."}
    theirs = two.get("/api/progress").json()
    assert theirs["widgets"]["fanin"]["asked"] == 0
    assert "0 of 1 prediction right" in one.get("/flows").text  # the hub beside its dives
    assert "Your progress on this page" in one.get("/flows/parent-and-children").text


def test_start_over_from_another_site_is_refused_and_forgets_nothing(site: LiveSite) -> None:
    client = site.visitor()
    client.get("/api/widgets/fanin/state")
    complete(client, 2)
    refused = client.post("/progress/start-over", headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert site.redis().exists(progress_key(sandbox_of(client)))
    done = client.post("/progress/start-over", headers={"Origin": site.url})
    assert done.status_code == 303 and done.headers["location"] == "/progress"
    assert not site.redis().exists(progress_key(sandbox_of(client)))
    # The scenario started over too: the fan-in lands afresh when it next shows.
    snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
    assert "0 of 3 children complete" in snap["readout"]


def test_the_record_survives_a_widget_reset_and_expires_with_its_sandbox(site: LiveSite) -> None:
    client = site.visitor()
    client.get("/api/widgets/fanin/state")
    complete(client, 2)
    assert client.post("/api/widgets/fanin/reset", json={}).status_code == 200
    sandbox = sandbox_of(client)
    key = progress_key(sandbox)
    valkey = site.redis()
    assert valkey.hget(key, "reached:fanin") == "1" and valkey.hget(key, "at:fanin") == "0"
    assert valkey.ttl(key) > 0

    async def expire() -> list[str]:
        conn = aioredis.Redis.from_url(site.valkey_url, decode_responses=True)
        try:
            await conn.zadd("lab:sandboxes", {sandbox: 0})  # idle since the epoch
            return await lifecycle.expire_idle(conn, 60)
        finally:
            await conn.aclose()

    assert sandbox in asyncio.run(expire())
    assert not valkey.exists(key)
