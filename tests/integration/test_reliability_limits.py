"""Limits that limit, on the real site (issue 28): actions per visitor and per
address, a class member counted by the class rather than its address, reads
on a budget of their own, new sandboxes per address (admission) with room
left for another address, eviction of never-used sandboxes when the site is
full, a bad setting stopping the site at start, the cookie secret outliving
Valkey's data, and a client that hangs up mid-upload. The instructor's token
guessing is in test_reliability_tokens.py.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from server.sandboxes.admission import UNUSED_KEY
from server.sandboxes.keys import REGISTRY_KEY
from server.sandboxes.sandbox import COOKIE, SandboxCookie, new_id
from server.valkey.process import ValkeyProcess
from server.web.guards import WINDOW
from tests.integration import classes_direct
from tests.support import DIVE, LIMITS, LiveSite, deps, running, sandbox_of

SECRET = "reliability-test-secret"


def fresh_window() -> None:
    """Rates count in fixed windows of the system's monotonic clock (the site's
    and this process's): a burst (well under a second here) must not start in
    a window's last two seconds."""
    if time.monotonic() % WINDOW > WINDOW - 2:
        time.sleep(WINDOW - time.monotonic() % WINDOW + 0.05)


def statuses(client: httpx.Client, path: str, times: int) -> list[int]:
    if path.startswith("GET "):
        return [client.get(path[4:]).status_code for _ in range(times)]
    return [client.post(path, json={}).status_code for _ in range(times)]


def test_actions_are_limited_per_visitor_and_per_address_and_reads_have_a_budget_of_their_own() -> None:
    env = {"EMQLAB_RATE_LIMIT": "3", "EMQLAB_ADDRESS_RATE_LIMIT": "5", "EMQLAB_READ_LIMIT": "4"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        one, two = site.visitor(), site.visitor()
        elsewhere = site.client_from("127.0.0.2")
        assert elsewhere.get(DIVE).status_code == 200
        fresh_window()
        assert statuses(one, "/api/widgets/fanin/redeliver", 4) == [200, 200, 200, 429]
        said = one.post("/api/widgets/fanin/redeliver", json={}).json()["error"]
        assert "at most 3 every 10 seconds per visitor" in said
        # a fresh cookie does not reset the address's count: 3 + 2 = its 5
        assert statuses(two, "/api/widgets/fanin/redeliver", 2) == [200, 200]
        over = two.post("/api/widgets/fanin/redeliver", json={})
        assert over.status_code == 429 and "from your address" in over.json()["error"]
        assert statuses(elsewhere, "/api/widgets/fanin/redeliver", 1) == [200]  # another address
        # reads spend their own budget, and none of the actions'
        assert statuses(elsewhere, "GET /api/widgets/fanin/state", 5) == [200] * 4 + [429]
        assert "too many reads" in elsewhere.get("/api/widgets/fanin/state").json()["error"]
        assert statuses(elsewhere, "/api/widgets/fanin/redeliver", 2) == [200, 200]


def test_a_class_behind_one_address_is_counted_by_the_class_not_by_that_address() -> None:
    env = {"EMQLAB_SECRET": classes_direct.SECRET, "EMQLAB_RATE_LIMIT": "100", "EMQLAB_ADDRESS_RATE_LIMIT": "4",
           "EMQLAB_ROOM_RATE_LIMIT": "10"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        members = [site.visitor() for _ in range(6)]
        classes_direct.enrol(site, members)
        stranger = site.visitor()
        fresh_window()
        spent = [code for member in members for code in statuses(member, "/api/widgets/fanin/redeliver", 2)]
        assert spent == [200] * 10 + [429] * 2  # 12 actions from one address: the class's 10 are let in
        refused = members[0].post("/api/widgets/fanin/redeliver", json={}).json()["error"]
        assert "in this class" in refused
        assert statuses(stranger, "/api/widgets/fanin/redeliver", 5) == [200] * 4 + [429]


async def gather_limited(calls: list[Any], width: int = 20) -> list[Any]:
    gate = asyncio.Semaphore(width)

    async def one(call: Any) -> Any:
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


def test_a_flood_of_cookieless_visitors_from_one_address_leaves_room_for_another() -> None:
    env = {"EMQLAB_SECRET": SECRET, "EMQLAB_MAX_SANDBOXES": "60", "EMQLAB_ADDRESS_SANDBOXES": "40"}
    signer = SandboxCookie(SECRET)

    async def flood(site: LiveSite) -> list[httpx.Response]:
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2", limits=LIMITS)
        # cookieless: the client keeps no cookie a page sets (a flood's clients do not)
        keep_none = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        async with httpx.AsyncClient(base_url=site.url, transport=transport, timeout=30, cookies=keep_none) as client:
            pages = await gather_limited([client.get(DIVE) for _ in range(300)])
            assert {p.status_code for p in pages} == {200}
            assert site.redis().zcard(REGISTRY_KEY) == 0  # a page visit registers nothing
            client.cookies.clear()
            cookies = [signer.serializer.dumps(new_id()) for _ in range(150)]
            return await gather_limited([  # each a new visitor's first state read
                client.get("/api/widgets/fanin/state", headers={"Cookie": f"{COOKIE}={c}"}) for c in cookies])

    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        states = asyncio.run(flood(site))
        codes = [s.status_code for s in states]
        assert codes.count(200) == 40, codes
        refused = [s for s in states if s.status_code != 200]
        assert len(refused) == 110 and {s.status_code for s in refused} == {429}, {s.status_code for s in refused}
        assert "Too many new visitors from your address" in refused[0].json()["error"]
        other = site.client_from("127.0.0.3")
        assert other.get(DIVE).status_code == 200
        answer = other.get("/api/widgets/fanin/state")
        assert answer.status_code == 200 and deps(answer.json()["snapshot"]) == 3
        assert site.redis().zcard(REGISTRY_KEY) == 41


def test_a_full_site_evicts_idle_never_used_sandboxes_before_a_learners_work() -> None:
    env = {"EMQLAB_MAX_SANDBOXES": "3", "EMQLAB_UNUSED_IDLE": "0"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        learner = site.visitor()
        assert learner.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        for _ in range(2):
            assert site.visitor().get("/api/widgets/fanin/state").status_code == 200
        valkey_now = site.redis()
        assert valkey_now.zcard(REGISTRY_KEY) == 3 and valkey_now.zcard(UNUSED_KEY) == 2
        oldest = str(valkey_now.zrange(UNUSED_KEY, 0, 0)[0])
        for _ in range(4):  # each newcomer takes the place of the longest-idle never-used one
            assert site.visitor().get("/api/widgets/fanin/state").status_code == 200
            assert valkey_now.zcard(REGISTRY_KEY) == 3
        assert valkey_now.zscore(REGISTRY_KEY, oldest) is None
        assert learner.post("/api/widgets/fanin/complete-child", json={}).status_code == 200  # theirs is kept
        assert deps(learner.get("/api/widgets/fanin/state").json()["snapshot"]) == 1


def test_past_the_sandbox_cap_pages_render_and_a_new_sandbox_is_told_the_site_is_full() -> None:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_MAX_SANDBOXES": "2"}) as site:
        first, second, third = site.visitor(), site.visitor(), site.visitor()
        for client in (first, second):
            assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        for answer in (third.get("/api/widgets/fanin/state"), third.post("/api/widgets/fanin/claim", json={})):
            assert answer.status_code == 503 and "The site is full" in answer.json()["error"]
            assert answer.headers["retry-after"]
        assert third.get(DIVE).status_code == 200
        assert first.post("/api/widgets/fanin/complete-child", json={}).status_code == 200


@pytest.mark.parametrize(("variable", "value", "said"), [
    ("EMQLAB_INSTRUCTOR_TOKEN", "short-token", "at least 16 characters"),
    ("EMQLAB_MAX_SANDBOXES", "lots", "valid integer"),
])
def test_a_bad_setting_stops_the_site_at_start_naming_the_variable(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    log = tmp_path / "site.log"
    with ValkeyProcess() as valkey, log.open("wb") as sink:
        site = LiveSite(valkey.url, {variable: value})
        with pytest.raises(RuntimeError, match="exited early"):
            site.start(output=sink)
    text = log.read_text()
    assert "the site cannot start" in text and variable in text and said in text


def test_the_cookie_secret_outlives_a_valkey_flush_and_a_restart_of_the_site(tmp_path: Path) -> None:
    env = {"EMQLAB_DATA_DIR": str(tmp_path / "data")}
    with ValkeyProcess() as valkey:
        with running(valkey.url, env) as site:
            client = site.visitor()
            sandbox = sandbox_of(client)
            assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        redis.Redis.from_url(valkey.url).flushall()
        with running(valkey.url, env) as again:
            answer = again.client(cookies=client.cookies).get("/api/widgets/fanin/state")
            assert answer.status_code == 200, answer.text  # the same cookie, still this site's
            assert deps(answer.json()["snapshot"]) == 3  # landed afresh in the same sandbox
            assert again.redis().exists(f"emq:{{{sandbox}.fanin}}:job:JOBparent")


def test_a_client_that_hangs_up_mid_upload_is_not_logged_as_a_server_failure(tmp_path: Path) -> None:
    import socket

    log = tmp_path / "site.log"
    with ValkeyProcess() as valkey, log.open("wb") as sink:
        site = LiveSite(valkey.url)
        site.start(output=sink)
        try:
            client = site.visitor()
            with socket.create_connection(("127.0.0.1", site.port)) as raw:
                raw.sendall(b"POST /api/widgets/fanin/redeliver HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Type: application/json\r\n"
                            + f"Cookie: {COOKIE}={client.cookies[COOKIE]}\r\nContent-Length: 5000\r\n\r\n".encode()
                            + b'{"a": "' + b"x" * 100)
                time.sleep(0.3)
            time.sleep(0.5)
            assert client.post("/api/widgets/fanin/redeliver", json={}).status_code == 200
        finally:
            site.stop()
    text = log.read_text()
    assert "Traceback" not in text and "Exception in ASGI application" not in text
