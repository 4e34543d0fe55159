"""Abuse and settings, against the real site on a Valkey of each test's own (issue 13).

Floods from one address (item 5), token guessing (6), growth a learner
controls (7), the secret surviving Valkey (10), and the small ones (11).
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import redis

from server.sandboxes.admission import UNUSED_KEY
from server.sandboxes.sandbox import COOKIE, REGISTRY_KEY, SandboxCookie, new_id
from server.valkey.process import ValkeyProcess
from server.widgets.outbox import MAX_ENTRIES
from tests.support import DIVE, INSTRUCTOR_TOKEN, ROOT, LiveSite, running

SECRET = "reliability-test-secret"


def from_address(site: LiveSite, address: str, cookie: str | None = None) -> httpx.AsyncClient:
    """A client whose connections leave from `address` (127.0.0.2, 127.0.0.3, …)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    cookies = {COOKIE: cookie} if cookie else None
    return httpx.AsyncClient(base_url=site.url, transport=transport, cookies=cookies, timeout=20)


async def gather_limited(calls: list[Any], width: int = 20) -> list[Any]:
    gate = asyncio.Semaphore(width)

    async def one(call: Any) -> Any:
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


def test_flood_of_cookieless_visitors_from_one_address_leaves_room_for_another() -> None:
    env = {"EMQLAB_SECRET": SECRET, "EMQLAB_MAX_SANDBOXES": "60", "EMQLAB_ADDRESS_SANDBOXES": "40"}
    signer = SandboxCookie(SECRET)

    async def scenario(site: LiveSite) -> None:
        async with from_address(site, "127.0.0.2") as flood:
            pages = await gather_limited([flood.get("/") for _ in range(2000)])
            assert {p.status_code for p in pages} == {200}
            assert site.redis().zcard(REGISTRY_KEY) == 0  # a page visit registers nothing
            cookies = [signer.serializer.dumps(new_id()) for _ in range(300)]
            states = await gather_limited([
                flood.get("/api/widgets/fanin/state", cookies={COOKIE: c}) for c in cookies])
        codes = [s.status_code for s in states]
        assert codes.count(200) == 40 and codes.count(429) == 260
        assert "too many new sandboxes from one address" in next(s for s in states if s.status_code == 429).text
        async with from_address(site, "127.0.0.3") as other:
            assert (await other.get(DIVE)).status_code == 200
            answer = await other.get("/api/widgets/fanin/state")
            assert answer.status_code == 200
            assert answer.json()["snapshot"]["picture"]["parent"]["dependencies"] == 3
            async with other.stream("GET", "/api/stream?widgets=fanin") as live:
                lines = live.aiter_lines()
                while not (await anext(lines)).startswith("event: snapshot"):
                    pass
        assert site.redis().zcard(REGISTRY_KEY) == 41

    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        asyncio.run(scenario(site))


def test_a_full_site_evicts_idle_never_used_sandboxes_before_a_learners_work() -> None:
    env = {"EMQLAB_MAX_SANDBOXES": "3", "EMQLAB_UNUSED_IDLE": "0"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        learner = site.visitor()
        assert learner.post("/api/widgets/fanin/complete-child").status_code == 200
        idle = [site.visitor() for _ in range(2)]
        for client in idle:
            assert client.get("/api/widgets/fanin/state").status_code == 200
        r = site.redis()
        assert r.zcard(REGISTRY_KEY) == 3 and r.zcard(UNUSED_KEY) == 2
        oldest = r.zrange(UNUSED_KEY, 0, 0)[0]
        for _ in range(4):  # each newcomer takes the place of the longest-idle never-used one
            newcomer = site.visitor()
            assert newcomer.get("/api/widgets/fanin/state").status_code == 200
            assert r.zcard(REGISTRY_KEY) == 3
        assert r.zscore(REGISTRY_KEY, oldest) is None
        assert learner.post("/api/widgets/fanin/complete-child").status_code == 200  # the learner kept theirs
        assert learner.get("/api/widgets/fanin/state").json()["snapshot"]["picture"]["parent"]["dependencies"] == 1


def wait_for_a_fresh_window(seconds: int = 10) -> None:
    """Rates count in fixed windows: start a burst near a window's beginning."""
    if time.time() % seconds > 2:
        time.sleep(seconds - time.time() % seconds + 0.05)


def test_actions_are_limited_per_address_whatever_the_cookie_and_per_room() -> None:
    env = {"EMQLAB_RATE_LIMIT": "100", "EMQLAB_ADDRESS_RATE_LIMIT": "6"}
    with ValkeyProcess() as valkey, running(valkey.url, env) as site:
        clients = [site.visitor() for _ in range(4)]
        wait_for_a_fresh_window()
        codes = []
        for client in clients:  # a fresh cookie every 3 actions does not reset the count
            codes += [client.post("/api/widgets/fanin/redeliver").status_code for _ in range(3)]
        assert codes == [200] * 6 + [429] * 6
        refused = client.post("/api/widgets/fanin/redeliver")
        assert "from your address" in refused.json()["error"]
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_RATE_LIMIT": "5"}) as site:
        instructor = site.instructor()
        code = instructor.post("/instructor/rooms", json={"name": "class"}).json()["room"]["code"]
        members = [site.visitor() for _ in range(6)]
        for member in members:
            assert member.post("/room/join", json={"code": code, "name": "m"}).status_code == 200
        wait_for_a_fresh_window()
        for member in members[:5]:  # five members at full speed…
            spent = [member.post("/api/widgets/fanin/redeliver").status_code for _ in range(6)]
            assert spent == [200] * 5 + [429]
        # …leave the room's budget (20 visitors' worth) for the sixth
        assert members[5].post("/api/widgets/fanin/redeliver").status_code == 200


def test_forwarded_for_is_trusted_only_when_a_setting_says_so() -> None:
    env = {"EMQLAB_ADDRESS_RATE_LIMIT": "3", "EMQLAB_RATE_LIMIT": "100"}
    for trusted, expected in (("0", [200] * 3 + [429] * 3), ("1", [200] * 6)):
        with ValkeyProcess() as valkey, running(valkey.url, {**env, "EMQLAB_TRUST_FORWARDED_FOR": trusted}) as site:
            client = site.visitor()
            wait_for_a_fresh_window()
            codes = [client.post("/api/widgets/fanin/redeliver",
                                 headers={"X-Forwarded-For": f"10.0.0.{n % 2}, 192.0.2.{n}"}).status_code
                     for n in range(6)]
            assert codes == expected


def wait_for_a_fresh_minute() -> None:
    if time.time() % 60 > 50:  # the attempt counters are per minute: start inside one
        time.sleep(61 - time.time() % 60)


def test_token_guessing_by_form_or_bearer_is_limited_atomically_and_the_right_token_still_signs_in() -> None:
    async def scenario(site: LiveSite) -> None:
        wait_for_a_fresh_minute()
        async with httpx.AsyncClient(base_url=site.url, timeout=20) as client:
            guesses = await gather_limited([
                client.post("/instructor/sign-in", json={"token": f"guess-{n}"}) for n in range(120)], width=60)
            codes = [g.status_code for g in guesses]
            assert codes.count(401) == 20 and codes.count(429) == 100
            bearer = await gather_limited([
                client.get("/instructor/overview", headers={"Authorization": f"Bearer guess-{n}"})
                for n in range(50)], width=50)
            assert {b.status_code for b in bearer} == {429}
            right = await client.get("/instructor/overview", headers={"Authorization": f"Bearer {INSTRUCTOR_TOKEN}"})
            assert right.status_code == 200
            signed = await client.post("/instructor/sign-in", json={"token": INSTRUCTOR_TOKEN})
            assert signed.status_code == 200

    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_ATTEMPT_LIMIT": "20"}) as site:
        asyncio.run(scenario(site))


def test_bearer_guesses_alone_count_against_the_limit() -> None:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_ATTEMPT_LIMIT": "5"}) as site:
        wait_for_a_fresh_minute()
        client = site.client()
        codes = [client.get("/instructor/overview", headers={"Authorization": f"Bearer no-{n}"}).status_code
                 for n in range(8)]
        assert codes == [401] * 5 + [429] * 3


def test_poison_entries_are_capped_with_a_409_and_nothing_is_written_past_the_cap() -> None:
    with ValkeyProcess() as valkey, running(valkey.url) as site:
        client = site.visitor()
        r = site.redis()
        codes = [client.post("/api/widgets/outbox/add-poison").status_code for _ in range(MAX_ENTRIES + 5)]
        assert codes == [200] * MAX_ENTRIES + [409] * 5
        lists = [k for k in r.scan_iter("emq:*flow:outbox*") if r.type(k) == "list"]
        held = sum(r.llen(k) for k in lists)
        assert held == MAX_ENTRIES
        refused = client.post("/api/widgets/outbox/add-poison")
        assert refused.status_code == 409 and "nothing was added" in refused.json()["error"]
        assert sum(r.llen(k) for k in lists) == held


def test_the_cookie_secret_lives_in_a_0600_file_and_survives_a_valkey_flush(tmp_path: Path) -> None:
    env = {"EMQLAB_DATA_DIR": str(tmp_path / "state"), "EMQLAB_SECRET": ""}
    with ValkeyProcess() as valkey:
        with running(valkey.url, env) as site:
            client = site.visitor()
            before = client.get("/api/widgets/fanin/state").json()["snapshot"]["queues"][0]["queue"]
        secret = tmp_path / "state" / "secret"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        written = secret.read_text()
        redis.Redis.from_url(valkey.url).flushall()
        with running(valkey.url, env) as again, running(valkey.url, env) as second_worker:
            for site in (again, second_worker):
                answer = site.client(cookies=client.cookies).get("/api/widgets/fanin/state")
                assert answer.status_code == 200
                assert answer.json()["snapshot"]["queues"][0]["queue"] == before
        assert secret.read_text() == written


def test_a_sandbox_ttl_shorter_than_the_stream_lifetime_is_refused_at_start() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMQLAB_SANDBOX_TTL": "60", "EMQLAB_STREAM_LIFETIME": "600",
           "EMQLAB_VALKEY_URL": "redis://127.0.0.1:1/0"}
    done = subprocess.run([sys.executable, "-c", "from server.settings import Settings; Settings.from_env()"],
                          env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0
    assert "EMQLAB_SANDBOX_TTL (60 s) is shorter than EMQLAB_STREAM_LIFETIME (600 s)" in done.stderr


def test_the_origin_check_compares_the_scheme_and_a_proxy_names_the_public_origin() -> None:
    with ValkeyProcess() as valkey:
        with running(valkey.url) as site:
            client = site.visitor()
            host = site.url.split("://")[1]
            assert client.post("/api/widgets/fanin/redeliver", headers={"Origin": f"https://{host}"}).status_code == 403
            assert client.post("/api/widgets/fanin/redeliver", headers={"Origin": f"http://{host}"}).status_code == 200
        with running(valkey.url, {"EMQLAB_PUBLIC_ORIGIN": "https://flows.example.org"}) as proxied:
            client = proxied.visitor()
            host = proxied.url.split("://")[1]
            ok = client.post("/api/widgets/fanin/redeliver", headers={"Origin": "https://flows.example.org"})
            assert ok.status_code == 200
            assert client.post("/api/widgets/fanin/redeliver", headers={"Origin": f"http://{host}"}).status_code == 403


def test_a_client_that_disconnects_mid_upload_is_not_logged_as_a_server_failure(tmp_path: Path) -> None:
    import socket

    log = tmp_path / "site.log"
    with ValkeyProcess() as valkey:
        site = LiveSite(valkey.url)
        with log.open("wb") as sink:
            site.start(output=sink)
            try:
                client = site.visitor()
                cookie = client.cookies[COOKIE]
                with socket.create_connection(("127.0.0.1", site.port)) as raw:
                    raw.sendall(
                        b"POST /api/widgets/fanin/redeliver HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        + f"Cookie: {COOKIE}={cookie}\r\nContent-Length: 5000\r\n\r\n".encode()
                        + b'{"a": "' + b"x" * 100)
                    time.sleep(0.3)
                time.sleep(0.5)
                assert client.post("/api/widgets/fanin/redeliver").status_code == 200
            finally:
                site.stop()
        text = log.read_text()
        assert "Traceback" not in text and "Exception in ASGI application" not in text
