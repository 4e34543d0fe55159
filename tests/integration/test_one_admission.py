"""One admission for every sandbox: whether its first write comes from a widget, the
console or an exercise, a sandbox is admitted (the site's cap, its address's share),
registered, listed to the instructor, and reaped with its keys and its Valkey ACL user.
Reset-all clears what a console wrote into the queue of a widget that never showed."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from server.emq import registry
from server.lifecycle import reaper
from server.sandboxes import admission
from server.sandboxes.keys import REGISTRY_KEY
from server.valkey.client import open_client
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from server.widgets.snapshot import Catalog
from tests.support import ROOT, LiveSite, running, sandbox_of

ADDRESS_SHARE = 3  # new sandboxes one address may open per window, on this module's site


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_ADDRESS_SANDBOXES": str(ADDRESS_SHARE)}) as live:
        yield live


@pytest.fixture
def fresh(site: LiveSite) -> LiveSite:
    site.redis().flushdb()  # the cookie secret lives in the data directory, not in Valkey
    return site


def console(client: httpx.Client, line: str) -> httpx.Response:
    return client.post("/api/console", json={"command": line}, headers={"Origin": str(client.base_url)})


def users(site: LiveSite) -> set[str]:
    return {str(u) for u in site.redis().execute_command("ACL", "USERS")}


def keys_of(site: LiveSite, sandbox: str) -> list[str]:
    return sorted(site.redis().scan_iter(f"emq:{{{sandbox}.*"))


def reap_now(site: LiveSite) -> dict[str, list[str]]:
    """One round of the reaper with a TTL of 0 s: every registered sandbox is idle past it."""
    async def once() -> dict[str, list[str]]:
        conn = open_client(site.valkey_url)
        try:
            return await reaper.reap(conn, Catalog(dict(WIDGETS)), ttl_seconds=0)
        finally:
            await conn.aclose()
    return asyncio.run(once())


def test_a_console_only_visitor_is_admitted_registered_and_listed_to_the_instructor(fresh: LiveSite) -> None:
    writer, reader = fresh.client_from("127.0.0.2"), fresh.client_from("127.0.0.2")
    for client in (writer, reader):
        assert client.get("/").status_code == 200  # a page without widgets: no sandbox registered yet
    r = fresh.redis()
    assert r.zcard(REGISTRY_KEY) == 0
    assert console(writer, "HSET emq:{fanin}:job:JOBmine note hello").status_code == 200
    assert console(reader, "GET emq:{fanin}:note").status_code == 200
    mine, theirs = sandbox_of(writer), sandbox_of(reader)
    assert r.zscore(REGISTRY_KEY, mine) is not None and r.zscore(admission.HELD_KEY, mine) is not None
    assert r.zscore(REGISTRY_KEY, theirs) is not None
    # a reader holds a place as a never-used sandbox (evictable); a writer is in use
    assert r.zscore(admission.UNUSED_KEY, theirs) is not None and r.zscore(admission.UNUSED_KEY, mine) is None
    listed = fresh.instructor().get("/instructor").text
    assert mine in listed and theirs in listed


def test_the_reaper_removes_a_console_only_sandbox_its_keys_and_its_acl_user(fresh: LiveSite) -> None:
    client = fresh.client_from("127.0.0.3")
    client.get("/")
    assert console(client, "RPUSH emq:{outbox.mail}:job:JOBm:logs one two three").status_code == 200
    sandbox = sandbox_of(client)
    assert keys_of(fresh, sandbox) and f"sbx-{sandbox}" in users(fresh)
    assert sandbox in reap_now(fresh)["sandboxes"]
    assert keys_of(fresh, sandbox) == []
    assert f"sbx-{sandbox}" not in users(fresh)
    assert fresh.redis().zscore(REGISTRY_KEY, sandbox) is None
    assert fresh.redis().zscore(admission.HELD_KEY, sandbox) is None


def test_console_only_cookies_count_against_their_addresss_share_and_a_refused_one_writes_nothing(
    fresh: LiveSite,
) -> None:
    answers = []
    clients = [fresh.client_from("127.0.0.4") for _ in range(ADDRESS_SHARE + 1)]
    for client in clients:
        client.get("/")
        answers.append(console(client, "SET emq:{fanin}:note hello"))
    assert [a.status_code for a in answers] == [200] * ADDRESS_SHARE + [429]
    assert "Too many new visitors from your address" in answers[-1].json()["error"]
    refused = sandbox_of(clients[-1])
    assert keys_of(fresh, refused) == [] and f"sbx-{refused}" not in users(fresh)
    assert fresh.redis().zscore(REGISTRY_KEY, refused) is None


def test_an_exercise_run_admits_and_registers_its_sandbox(fresh: LiveSite) -> None:
    client = fresh.client_from("127.0.0.5")
    client.get("/")
    answer = client.post("/api/exercises/fan-in/run", json={"script": registry.script_source("complete")},
                         headers={"Origin": fresh.url})
    assert answer.status_code == 200, answer.text
    sandbox = sandbox_of(client)
    r = fresh.redis()
    assert r.zscore(REGISTRY_KEY, sandbox) is not None and r.zscore(admission.UNUSED_KEY, sandbox) is None
    assert r.exists(f"lab:{{{sandbox}}}:progress")
    assert sandbox in reap_now(fresh)["sandboxes"]
    assert not r.exists(f"lab:{{{sandbox}}}:progress")


def test_emqlab_reset_all_clears_console_writes_in_the_queue_of_a_widget_that_never_showed(
    fresh: LiveSite,
) -> None:
    client = fresh.client_from("127.0.0.6")
    client.get("/")  # no widget shown: only the console writes
    for line in ("HSET emq:{outbox.billing}:job:JOBb payload big", "ZADD emq:{fanin}:pending 1 JOBz",
                 "SET emq:{native}:note hello"):
        assert console(client, line).status_code == 200, line
    sandbox = sandbox_of(client)
    assert len(keys_of(fresh, sandbox)) == 3
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMQLAB_VALKEY_URL": fresh.valkey_url}
    done = subprocess.run([sys.executable, "-m", "server.cli", "reset", "--all"], check=False, env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert keys_of(fresh, sandbox) == []
    assert fresh.redis().zscore(REGISTRY_KEY, sandbox) is not None  # reset, not removed: the learner stays
