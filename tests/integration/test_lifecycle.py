"""Lifecycle and caps: idle sandboxes and rooms expire with their keys, orphan
keys are removed, and the caps on sandboxes and keys per sandbox hold."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis

from server.web import guard
from server.sandboxes import lifecycle
from server.sandboxes import rooms
from server.sandboxes.sandbox import REGISTRY_KEY
from server.settings import Settings
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from server.widgets.base import Context
from tests.support import running

IDLE = "s0000000idl"
FRESH = "s0000000frs"


async def land(conn: aioredis.Redis, sandbox: str, seen_ms: int) -> int:
    await conn.zadd(REGISTRY_KEY, {sandbox: seen_ms})
    ctx = Context(conn, sandbox)
    for name in ("fanin", "enqueue-stepper"):
        await WIDGETS[name].show(ctx)
    await conn.hset(f"lab:{{{sandbox}}}:meta", "widget", "fanin")
    return len(await sandbox_keys(conn, sandbox))


async def sandbox_keys(conn: aioredis.Redis, sandbox: str) -> set[str]:
    return {k for k in await conn.keys("*") if lifecycle.sandbox_of_key(k) == sandbox}


async def test_idle_sandboxes_expire_with_every_key_and_active_ones_stay(conn: aioredis.Redis) -> None:
    now = int(time.time() * 1000)
    await land(conn, IDLE, now - 7200_000)
    kept = await land(conn, FRESH, now)
    await conn.set("not-a-sandbox:key", "1")
    gone = await lifecycle.expire_idle(conn, ttl_seconds=3600)
    assert gone == [IDLE]
    assert await sandbox_keys(conn, IDLE) == set()
    assert await conn.zscore(REGISTRY_KEY, IDLE) is None
    assert len(await sandbox_keys(conn, FRESH)) == kept
    assert await conn.get("not-a-sandbox:key") == "1"


async def test_a_sandbox_that_came_back_while_being_picked_is_kept(conn: aioredis.Redis) -> None:
    now = int(time.time() * 1000)
    kept = await land(conn, IDLE, now - 7200_000)
    await conn.zadd(REGISTRY_KEY, {IDLE: now})  # the visitor came back
    assert await lifecycle.expire_idle(conn, ttl_seconds=3600) == []
    assert len(await sandbox_keys(conn, IDLE)) == kept


async def test_keys_of_a_sandbox_that_is_not_live_are_removed_as_orphans(conn: aioredis.Redis) -> None:
    now = int(time.time() * 1000)
    await land(conn, IDLE, now)
    await land(conn, FRESH, now)
    await conn.zrem(REGISTRY_KEY, IDLE)  # a lost registry entry
    assert await lifecycle.remove_orphans(conn) == [IDLE]
    assert await sandbox_keys(conn, IDLE) == set()
    assert await sandbox_keys(conn, FRESH)


async def test_an_expired_room_is_forgotten_with_its_sandbox(conn: aioredis.Redis) -> None:
    room = await rooms.create(conn, "Short-lived", ttl=60, max_rooms=10)
    await land(conn, room.sandbox, int(time.time() * 1000))
    kept = await rooms.create(conn, "Still open", ttl=60, max_rooms=10)
    await conn.delete(rooms.room_key(room.code))  # as its TTL would
    done = await lifecycle.reap(conn, ttl_seconds=3600)
    assert done["rooms"] == [room.code]
    assert await sandbox_keys(conn, room.sandbox) == set()
    assert await conn.hget(rooms.ROOMS_KEY, room.code) is None
    assert (await rooms.get(conn, kept.code)) is not None
    assert await conn.ttl(rooms.room_key(kept.code)) > 0


async def test_every_lab_key_outside_sandboxes_has_an_expiry_or_is_bounded(conn: aioredis.Redis) -> None:
    room = await rooms.create(conn, "Ttl", ttl=120, max_rooms=10)
    assert 0 < await conn.ttl(rooms.room_key(room.code)) <= 120
    with pytest.raises(rooms.RoomsFull):
        await rooms.create(conn, "One too many", ttl=120, max_rooms=1)


async def test_the_sandbox_cap_admits_known_sandboxes_and_refuses_new_ones(conn: aioredis.Redis) -> None:
    await guard.admit(conn, "s000000000a", cap=2)
    await guard.admit(conn, "s000000000b", cap=2)
    with pytest.raises(guard.Refused) as refused:
        await guard.admit(conn, "s000000000c", cap=2)
    assert refused.value.status == 503 and "full" in str(refused.value)
    await guard.admit(conn, "s000000000a", cap=2)  # a known one still acts


def test_settings_refuse_values_out_of_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMQLAB_MAX_CHILDREN", "lots")
    with pytest.raises(SystemExit, match="EMQLAB_MAX_CHILDREN must be a whole number"):
        Settings.from_env()
    monkeypatch.setenv("EMQLAB_MAX_CHILDREN", "0")
    with pytest.raises(SystemExit, match="EMQLAB_MAX_CHILDREN must be from 1 to 1000"):
        Settings.from_env()
    monkeypatch.setenv("EMQLAB_MAX_CHILDREN", "8")
    monkeypatch.setenv("EMQLAB_SECURE_COOKIES", "yes")
    settings = Settings.from_env()
    assert settings.max_children == 8 and settings.secure_cookies is True


@pytest.fixture(scope="module")
def capped_valkey() -> Iterator[ValkeyProcess]:
    with ValkeyProcess() as server:
        yield server


def test_past_the_sandbox_cap_pages_render_and_widgets_answer_503(capped_valkey: ValkeyProcess) -> None:
    with running(capped_valkey.url, {"EMQLAB_MAX_SANDBOXES": "2"}) as site:
        first, second = site.visitor(), site.visitor()
        assert first.get("/api/widgets/fanin/state").status_code == 200
        assert second.get("/api/widgets/fanin/state").status_code == 200
        third = site.visitor()  # the page renders
        full = third.get("/api/widgets/fanin/state")
        assert full.status_code == 503
        assert "Flows Lab is full" in full.json()["error"]
        assert third.post("/api/widgets/fanin/complete-child").status_code == 503
        assert first.post("/api/widgets/fanin/complete-child").status_code == 200


def test_past_the_key_cap_actions_are_refused_until_a_reset(capped_valkey: ValkeyProcess) -> None:
    with running(capped_valkey.url, {"EMQLAB_MAX_KEYS_PER_SANDBOX": "50"}) as site:
        client = site.visitor()
        flows = [
            {"parent": {"id": f"JOBp{i}", "payload": "p"},
             "children": [{"id": f"JOBc{i}x{j}", "payload": "c"} for j in range(16)]}
            for i in range(4)
        ]
        landed = client.post("/api/widgets/ledger/custom-batch", json={"flows": flows})
        assert landed.status_code == 200, landed.text
        refused = client.post("/api/widgets/ledger/next")
        assert refused.status_code == 409
        assert "cap of 50" in refused.json()["error"] and "Reset" in refused.json()["error"]
        assert client.post("/api/widgets/ledger/reset").status_code == 200
        assert client.post("/api/widgets/ledger/next").status_code == 200
