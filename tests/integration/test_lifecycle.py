"""Lifecycle and caps: idle sandboxes and rooms expire with their keys, orphan
keys are removed, and the caps on sandboxes and keys per sandbox hold.

Removing or resetting a sandbox finds its keys by name: it leaves no key of
the sandbox (console writes and transcripts included), touches no key of
another sandbox, and sends the same commands whether 200 other sandboxes are
there or none (counted on the wire)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from bench.wire import WireCount
from server.console import owners, transcript
from server.sandboxes import admission, lifecycle, rooms
from server.sandboxes.sandbox import REGISTRY_KEY
from server.settings import Settings
from server.valkey.process import ValkeyProcess
from server.web import guard, limits
from server.widgets import WIDGETS
from server.widgets.base import Context
from tests.integration.conftest import all_keys
from tests.support import LiveSite, running, sandbox_of

IDLE = "s0000000idl"
FRESH = "s0000000frs"


async def land(conn: aioredis.Redis, sandbox: str, seen_ms: int) -> int:
    # admitted as the site admits it (the registry and the held index), then aged
    assert await admission.admit(conn, sandbox, admission.Limits(cap=10_000), used=True) == admission.ADMITTED
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


# -- removal and reset by name ---------------------------------------------------------

OTHER = "s0000000oth"


async def use(conn: aioredis.Redis, sandbox: str) -> None:
    """A learner who did everything: every widget landed and walked through
    its tour, a batch of their own, console writes outside every rule, two
    transcripts, a rate counter, meta and progress."""
    await land(conn, sandbox, int(time.time() * 1000))
    for widget in WIDGETS.values():
        ctx = Context(conn, sandbox)
        await widget.show(ctx)
        for step in widget.tour:
            slug, body = widget.tour_step(step)
            await widget.run(ctx, slug, body)
    batch = {"flows": [{"parent": {"id": "JOBmine", "payload": "p"},
                        "children": [{"id": "JOBmine1", "payload": "c"}]}]}
    await WIDGETS["ledger"].run(Context(conn, sandbox), "custom-batch", batch)
    ctx = Context(conn, sandbox)
    note = f"emq:{{{sandbox}.fanin}}:my-note"
    await owners.index(ctx, {"fanin": [note]})  # as the console names what it writes
    await conn.set(note, "hello")
    for visitor in (sandbox, "s0000000vis"):
        await transcript.record(conn, sandbox, visitor, {"command": "GET x", "reply_lines": []}, 60)
    await conn.incr(limits.rate_key(sandbox))
    await conn.hset(f"lab:{{{sandbox}}}:progress", "reached:fanin", 1)


async def dumped(conn: aioredis.Redis, sandbox: str) -> dict[str, bytes | None]:
    """Every key of `sandbox` with its value, byte for byte."""
    raw = aioredis.Redis(connection_pool=conn.connection_pool.__class__(**conn.connection_pool.connection_kwargs
                                                                        | {"decode_responses": False}))
    try:
        return {k: await raw.dump(k) for k in sorted(await sandbox_keys(conn, sandbox))}
    finally:
        await raw.aclose()


async def test_a_removed_sandbox_leaves_no_key_and_another_sandbox_keeps_every_byte(conn: aioredis.Redis) -> None:
    await use(conn, IDLE)
    await use(conn, OTHER)
    before = await dumped(conn, OTHER)
    held = len(await sandbox_keys(conn, IDLE))
    assert f"emq:{{{IDLE}.fanin}}:my-note" in await sandbox_keys(conn, IDLE)
    assert await lifecycle.delete_sandbox_keys(conn, IDLE) == held
    assert await sandbox_keys(conn, IDLE) == set()
    assert await conn.zscore(admission.HELD_KEY, IDLE) is None
    assert await dumped(conn, OTHER) == before


async def test_a_reset_sandbox_keeps_meta_and_progress_lands_again_and_another_keeps_every_byte(
        conn: aioredis.Redis) -> None:
    await use(conn, IDLE)
    await use(conn, OTHER)
    before = await dumped(conn, OTHER)
    kept = lifecycle.survives_reset(IDLE)
    held = await sandbox_keys(conn, IDLE)
    assert await lifecycle.reset_sandbox(conn, IDLE) == len(held - kept)
    after = await sandbox_keys(conn, IDLE)
    assert kept <= after
    assert f"emq:{{{IDLE}.fanin}}:my-note" not in after
    # a learner's own ledger batch goes too: Reset clears every id the lab state names
    assert not [k for k in after if ":job:JOBmine" in k]
    assert not [k for k in after if ":console" in k or ":rate:" in k]
    assert await conn.get(f"emq:{{{IDLE}.fanin}}:job:JOBparent:dependencies") == "3"
    assert await conn.hget(f"lab:{{{IDLE}}}:progress", "reached:fanin") == "1"
    state = await WIDGETS["fanin"].state(Context(conn, IDLE))
    assert "Reset by the instructor" in state["outcome"]
    assert await dumped(conn, OTHER) == before


async def crowd(conn: aioredis.Redis, n: int) -> None:
    """`n` idle sandboxes, each with its widgets landed (through the real scripts)."""
    async def one(i: int) -> None:
        sandbox = f"s{i:010d}"
        await land(conn, sandbox, int(time.time() * 1000))
        for widget in WIDGETS.values():
            await widget.show(Context(conn, sandbox))

    for start in range(0, n, 8):  # a few at a time: the client's pool is bounded
        await asyncio.gather(*(one(i) for i in range(start, min(n, start + 8))))


# What a client sends when its pool opens one more connection: the pool's
# doing (how many run at once), not the reset's, so it is left out.
HANDSHAKE = {"HELLO", "CLIENT", "AUTH", "SELECT"}


def sent(wire: WireCount) -> tuple[int, dict[str, int]]:
    """Round trips, and commands by name, that the work itself sent."""
    names = [n for n in wire.names if n not in HANDSHAKE]
    return wire.round_trips - (len(wire.names) - len(names)), dict(Counter(names))


async def wire_of(conn: aioredis.Redis, n: int) -> dict[str, tuple[int, dict[str, int]]]:
    """What a reset and a removal of IDLE send, and the fan-in's own Reset, with `n` others present."""
    await conn.flushdb()
    await crowd(conn, n)
    await use(conn, IDLE)
    await use(conn, FRESH)
    # scripts loaded once beforehand, so neither count carries a NOSCRIPT reload
    await lifecycle.reset_sandbox(conn, FRESH)
    await lifecycle.delete_sandbox_keys(conn, FRESH)
    counts = {}
    with WireCount("") as wire:  # every command this process sends, whatever it names
        await lifecycle.reset_sandbox(conn, IDLE)
    counts["reset"] = sent(wire)
    with WireCount("") as wire:
        await WIDGETS["fanin"].run(Context(conn, IDLE), "reset", {})
    counts["widget reset"] = sent(wire)
    with WireCount("") as wire:
        await lifecycle.delete_sandbox_keys(conn, IDLE)
    counts["removal"] = sent(wire)
    return counts


async def test_a_reset_and_a_removal_send_the_same_commands_with_200_other_sandboxes_as_with_none(
        conn: aioredis.Redis) -> None:
    alone = await wire_of(conn, 0)
    crowded = await wire_of(conn, 200)
    assert len(await conn.zrange(admission.HELD_KEY, 0, -1)) == 200
    assert all(trips > 0 for trips, _ in alone.values()), alone  # the counter saw the work
    assert crowded == alone


async def test_on_a_cluster_a_removal_and_a_reset_reach_every_slot_of_the_sandbox(cluster_conn: RedisCluster) -> None:
    conn = cluster_conn
    for sandbox in (IDLE, OTHER):
        assert await admission.admit(conn, sandbox, admission.Limits(cap=100), used=True) == admission.ADMITTED
        for widget in WIDGETS.values():
            await widget.show(Context(conn, sandbox))
        await owners.index(Context(conn, sandbox), {"fanin": [f"emq:{{{sandbox}.fanin}}:my-note"]})
        await conn.set(f"emq:{{{sandbox}.fanin}}:my-note", "hello")
        await transcript.record(conn, sandbox, sandbox, {"command": "GET x", "reply_lines": []}, 60)

    def of(keys: set[str], sandbox: str) -> set[str]:
        return {k for k in keys if lifecycle.sandbox_of_key(k) == sandbox}

    others = of(await all_keys(conn), OTHER)
    await lifecycle.reset_sandbox(conn, IDLE)
    after = of(await all_keys(conn), IDLE)
    assert f"emq:{{{IDLE}.fanin}}:my-note" not in after and not [k for k in after if ":console" in k]
    assert await conn.get(f"emq:{{{IDLE}.fanin}}:job:JOBparent:dependencies") == "3"
    assert await lifecycle.delete_sandbox_keys(conn, IDLE) > 0
    assert of(await all_keys(conn), IDLE) == set()
    assert of(await all_keys(conn), OTHER) == others


def test_console_writes_and_transcripts_go_with_an_instructor_reset_and_with_the_reaper(site: LiveSite) -> None:
    visitor = site.visitor()
    sandbox = sandbox_of(visitor)
    r = site.redis()
    written = [f"emq:{{{sandbox}.fanin}}:my-note", f"emq:{{{sandbox}.results}}:job:JOBextra"]

    def console_writes() -> None:
        for command in ("SET emq:{fanin}:my-note hello", "HSET emq:{results}:job:JOBextra state pending"):
            answer = visitor.post("/api/console", json={"command": command})
            assert answer.status_code == 200, answer.text
        assert all(r.exists(k) for k in written)
        assert r.exists(transcript.transcript_key(sandbox, sandbox))

    console_writes()
    answer = site.instructor().post("/instructor/reset", json={"sandbox": sandbox})
    assert answer.status_code == 200, answer.text
    assert not any(r.exists(k) for k in written)
    assert not r.exists(transcript.transcript_key(sandbox, sandbox))
    console_writes()

    async def reap() -> int:
        conn = aioredis.Redis.from_url(site.valkey_url, decode_responses=True)
        try:
            return await lifecycle.delete_sandbox_keys(conn, sandbox)
        finally:
            await conn.aclose()

    assert asyncio.run(reap()) > 0
    assert {k for k in r.scan_iter("*") if lifecycle.sandbox_of_key(k) == sandbox} == set()


async def test_a_sandbox_evicted_to_admit_another_is_removed_by_the_reaper(conn: aioredis.Redis) -> None:
    full = admission.Limits(cap=1, unused_idle=0)
    assert await admission.admit(conn, IDLE, full) == admission.ADMITTED  # never used
    await WIDGETS["fanin"].show(Context(conn, IDLE))
    assert await admission.admit(conn, FRESH, full, used=True) == IDLE  # the site was full: IDLE made room
    assert await conn.zscore(REGISTRY_KEY, IDLE) is None
    done = await lifecycle.reap(conn, ttl_seconds=3600)
    assert done["orphans"] == [IDLE]
    assert await sandbox_keys(conn, IDLE) == set()
    assert await lifecycle.reap(conn, ttl_seconds=3600) == {"sandboxes": [], "rooms": [], "orphans": []}
