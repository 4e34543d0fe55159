"""A sandbox's life outside one click (server/lifecycle/), on a real Valkey:
the reaper expires idle sandboxes and classes and removes orphans; a removal
leaves no key of the sandbox; an instructor's reset lands every widget again
and keeps who the learner is and their progress; reset-all reaches every
sandbox the site knows. Every one of them names the sandbox's keys, so it
sends the same commands with 200 other sandboxes in Valkey as with none
(counted by Valkey itself, INFO commandstats), and touches no byte of
another sandbox.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.console import transcript
from server.console.api import ConsoleContext, queue_lock, run_line
from server.console.as_user import Runner
from server.emq import flows
from server.emq.wire import Conn
from server.lifecycle import reaper, resets
from server.live import events
from server.sandboxes import admission, keys, learners, progress, rooms
from server.sandboxes.keys import REGISTRY_KEY
from server.valkey.process import ValkeyProcess
from server.web import attempts
from server.widgets import WIDGETS, fanin
from tests.support import LiveSite, running, sandbox_of
from tests.widgets import act, catalog, lab, show, snapshot_of

IDLE, FRESH, OTHER = "s0000000idl", "s0000000frs", "s0000000oth"
SECRET = "lifecycle-test-secret"
QUEUES = frozenset(part for widget in WIDGETS.values() for part in widget.queue_parts)
HOUR_MS = 3600_000


@pytest.fixture
async def runner(conn: Conn) -> AsyncIterator[Runner]:
    """The console's runner of sandbox ACL users (dropped afterwards: users outlive FLUSHDB)."""
    made = Runner(conn, SECRET)
    yield made
    await made.aclose()
    users = [u for u in await conn.execute_command("ACL", "USERS") if u.startswith("sbx-")]
    if users:
        await conn.execute_command("ACL", "DELUSER", *users)


async def admit(conn: Conn, sandbox: str, limits: admission.Limits, address: str = "unknown",
                used: bool = False) -> int | str:
    """`admit.lua`'s reply as the site's door sends it: ADMITTED, FULL, ADDRESS_FULL, or the id of the
    sandbox evicted to admit this one (which `Door.enter` does not return)."""
    script, keys_of, args = admission.Door(limits, address).call(sandbox, used)
    reply = await script.run(conn, keys_of, args)
    return reply if isinstance(reply, str) else int(reply)


async def admitted(conn: Conn, sandbox: str, seen_ms: int | None = None) -> None:
    """Admitted as the site admits a sandbox (registry and held index), last seen at `seen_ms`."""
    assert await admit(conn, sandbox, admission.Limits(cap=10_000), used=True) == admission.ADMITTED
    if seen_ms is not None:
        await conn.zadd(REGISTRY_KEY, {sandbox: seen_ms})


async def use(conn: Conn, sandbox: str, console: Runner | None = None) -> None:
    """A learner who did everything: every widget landed and walked through its
    tour, console writes under names no rule finds, two transcripts, progress."""
    await admitted(conn, sandbox)
    for name, widget in WIDGETS.items():
        await show(conn, name, sandbox)
        for step in widget.tour:
            for slug, body in step.replay:
                await act(conn, name, slug, sandbox, **body)
    if console is not None:
        context = ConsoleContext(conn, console, sandbox, QUEUES, queue_lock(conn, sandbox))
        for line in ("SET emq:{fanin}:my-note hello", "HSET emq:{native}:job:JOBextra state pending"):
            reply = await run_line(context, line)
            assert reply.kind == "reply", reply
    for visitor in (sandbox, "s0000000vis"):
        await transcript.record(conn, sandbox, visitor, {"command": "PING", "reply_lines": ["PONG"]}, 600)


async def names_of(conn: Conn, sandbox: str) -> set[str]:
    """Every key of the sandbox: its queues' (emq: and lab:) and its own records."""
    found = set()
    for pattern in (f"emq:{{{sandbox}.*", f"lab:{{{sandbox}.*", f"lab:{{{sandbox}}}:*"):
        found |= {k async for k in conn.scan_iter(match=pattern, count=1000)}
    return found


async def dumped(url: str, sandbox: str) -> dict[str, bytes | None]:
    """Every key of the sandbox, byte for byte (DUMP), and its places in the site's indexes."""
    raw = aioredis.Redis.from_url(url)
    text = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        found: dict[str, bytes | None] = {k: await raw.dump(k) for k in sorted(await names_of(text, sandbox))}
        for index in (REGISTRY_KEY, admission.HELD_KEY):
            found[index] = str(await text.zscore(index, sandbox)).encode()
        return found
    finally:
        await raw.aclose()
        await text.aclose()


# -- the reaper -----------------------------------------------------------------------


async def test_idle_sandboxes_expire_with_every_key_and_active_ones_stay(conn: Conn, valkey: ValkeyProcess) -> None:
    now = int(time.time() * 1000)
    await use(conn, IDLE)
    await use(conn, FRESH)
    await conn.zadd(REGISTRY_KEY, {IDLE: now - 2 * HOUR_MS})
    await conn.set("not-a-sandbox:key", "1")
    kept = await dumped(valkey.url, FRESH)
    assert await reaper.expire_idle(conn, catalog(), ttl_seconds=3600) == [IDLE]
    assert await names_of(conn, IDLE) == set()
    assert await conn.zscore(REGISTRY_KEY, IDLE) is None and await conn.zscore(admission.HELD_KEY, IDLE) is None
    assert await dumped(valkey.url, FRESH) == kept
    assert await conn.get("not-a-sandbox:key") == "1"


async def test_a_sandbox_that_came_back_while_being_picked_is_kept(conn: Conn) -> None:
    await use(conn, IDLE)
    before = await names_of(conn, IDLE)
    await conn.zadd(REGISTRY_KEY, {IDLE: int(time.time() * 1000)})  # the visitor came back
    assert await reaper.expire_idle(conn, catalog(), ttl_seconds=3600) == []
    assert await names_of(conn, IDLE) == before


async def test_keys_of_a_sandbox_that_is_not_live_are_removed_as_orphans(conn: Conn) -> None:
    await use(conn, IDLE)
    await use(conn, FRESH)
    await conn.zrem(REGISTRY_KEY, IDLE)  # a lost registry entry
    assert (await reaper.reap(conn, catalog(), ttl_seconds=3600))["orphans"] == [IDLE]
    assert await names_of(conn, IDLE) == set()
    assert await names_of(conn, FRESH)


async def test_a_sandbox_evicted_to_admit_another_is_removed_by_the_reaper(conn: Conn) -> None:
    full = admission.Limits(cap=1, unused_idle=0)
    assert await admit(conn, IDLE, full) == admission.ADMITTED  # never used
    # the fan-in's flow, landed without the executor (whose landing counts as a use)
    await flows.add(conn, f"{IDLE}.fanin", {"parent": {"id": fanin.PARENT, "payload": "p"},
                                            "children": [{"id": c, "payload": "c"} for c in fanin.CHILDREN]})
    assert await admit(conn, FRESH, full, used=True) == IDLE  # the site was full: IDLE made room
    assert await conn.zscore(REGISTRY_KEY, IDLE) is None
    assert (await reaper.reap(conn, catalog(), ttl_seconds=3600))["orphans"] == [IDLE]
    assert await names_of(conn, IDLE) == set()
    assert await reaper.reap(conn, catalog(), ttl_seconds=3600) == {"sandboxes": [], "rooms": [], "orphans": []}


async def test_an_expired_class_is_forgotten_with_its_shared_sandbox(conn: Conn) -> None:
    room = await rooms.create(conn, "Short-lived", ttl=60, max_rooms=10)
    await use(conn, room.sandbox)
    kept = await rooms.create(conn, "Still open", ttl=60, max_rooms=10)
    await learners.join(conn, room.code, FRESH, "Ada", 60, 120)
    await conn.delete(rooms.room_key(room.code))  # as its TTL would
    done = await reaper.reap(conn, catalog(), ttl_seconds=3600)
    assert done["rooms"] == [room.code]
    assert await names_of(conn, room.sandbox) == set()
    assert await conn.hget(rooms.ROOMS_KEY, room.code) is None
    assert await learners.learner_ids(conn, room.code) == []
    assert await rooms.get(conn, kept.code) is not None and await conn.ttl(rooms.room_key(kept.code)) > 0


async def test_every_expired_index_entry_is_forgotten_even_two_naming_one_sandbox(conn: Conn) -> None:
    # an index written by hand (a restore, an older site): two codes, one sandbox, no room record for either
    await conn.hset(rooms.ROOMS_KEY, mapping={"AAAAAA": IDLE, "BBBBBB": IDLE})
    assert sorted(await rooms.expired(conn)) == [("AAAAAA", IDLE), ("BBBBBB", IDLE)]
    assert await conn.exists(rooms.ROOMS_KEY) == 0


async def test_the_reaper_drops_a_removed_sandboxs_valkey_user(conn: Conn, runner: Runner) -> None:
    await use(conn, IDLE, runner)
    assert f"sbx-{IDLE}" in await conn.execute_command("ACL", "USERS")
    await conn.zadd(REGISTRY_KEY, {IDLE: 1})
    assert await reaper.expire_idle(conn, catalog(), ttl_seconds=3600) == [IDLE]
    assert f"sbx-{IDLE}" not in await conn.execute_command("ACL", "USERS")


async def test_the_sites_own_keys_outside_a_sandbox_expire_or_are_bounded(conn: Conn) -> None:
    room = await rooms.create(conn, "Ttl", ttl=120, max_rooms=2)
    assert 0 < await conn.ttl(rooms.room_key(room.code)) <= 120
    await rooms.create(conn, "Second", ttl=120, max_rooms=2)
    with pytest.raises(rooms.RoomsFull):
        await rooms.create(conn, "One too many", ttl=120, max_rooms=2)
    await learners.join(conn, room.code, FRESH, "Ada", 120, 240)
    assert 0 < await conn.ttl(learners.learners_key(room.code)) <= 120
    await attempts.take(conn, "sign-in", [("v:" + FRESH, 10), ("a:127.0.0.9", 100)])
    for whose in ("v:" + FRESH, "a:127.0.0.9"):
        assert 0 < await conn.ttl(attempts.attempts_key("sign-in", whose)) <= 60
    limits = admission.Limits(cap=10, address_cap=5)
    assert await admit(conn, IDLE, limits, "127.0.0.9") == admission.ADMITTED
    assert 0 < await conn.ttl(admission.address_key("127.0.0.9", time.time())) <= 2 * admission.WINDOW


# -- removal and resets by name ----------------------------------------------------------


async def test_a_removed_sandbox_leaves_no_key_and_another_keeps_every_byte(
    conn: Conn, runner: Runner, valkey: ValkeyProcess
) -> None:
    await use(conn, IDLE, runner)
    await use(conn, OTHER, runner)
    before = await dumped(valkey.url, OTHER)
    held = await names_of(conn, IDLE)
    assert {f"emq:{{{IDLE}.fanin}}:my-note", transcript.transcript_key(IDLE, "s0000000vis"),
            keys.progress_key(IDLE)} <= held
    assert await reaper.delete(conn, catalog(), IDLE) == len(held)
    assert await names_of(conn, IDLE) == set()
    assert await conn.zscore(admission.HELD_KEY, IDLE) is None
    assert await dumped(valkey.url, OTHER) == before


async def test_an_instructors_reset_lands_every_widget_again_and_keeps_who_the_learner_is_and_their_progress(
    conn: Conn, runner: Runner, valkey: ValkeyProcess
) -> None:
    await use(conn, IDLE, runner)
    await use(conn, OTHER, runner)
    await conn.hset(keys.meta_key(IDLE), "name", "Ada")
    record = await progress.read(conn, IDLE)
    assert record, "the tours left a record"
    before = await dumped(valkey.url, OTHER)
    report = await resets.reset_sandboxes(lab(conn), [IDLE])
    assert (report.reset, report.failed) == ([IDLE], {})
    after = await names_of(conn, IDLE)
    assert f"emq:{{{IDLE}.fanin}}:my-note" not in after and f"emq:{{{IDLE}.native}}:job:JOBextra" not in after
    assert not [k for k in after if ":console" in k]
    assert await progress.read(conn, IDLE) == record
    assert await conn.hget(keys.meta_key(IDLE), "name") == "Ada"
    for name in WIDGETS:
        snap = await snapshot_of(conn, name, IDLE)
        assert snap.landed and snap.problem is None and snap.outcome is not None
        assert snap.outcome["by"] == "instructor"
        assert snap.outcome["text"].startswith("Reset")
    fanin = await snapshot_of(conn, "fanin", IDLE)
    assert fanin.readout.startswith("0 of 3 children complete → :dependencies = 3")
    assert await dumped(valkey.url, OTHER) == before


async def test_reset_all_resets_every_sandbox_the_site_knows_and_tells_every_page(conn: Conn) -> None:
    room = await rooms.create(conn, "Everyone", ttl=600, max_rooms=10)
    registered, held_only = IDLE, FRESH
    for sandbox in (registered, held_only, room.sandbox):
        await admitted(conn, sandbox)
        await act(conn, "fanin", "complete-child", sandbox)
    await conn.zrem(REGISTRY_KEY, held_only, room.sandbox)  # known only by the held index, or by its class
    async with conn.pubsub() as pubsub:
        await pubsub.subscribe(events.EVENTS_CHANNEL)
        await pubsub.get_message(timeout=1)
        report = await resets.reset_sandboxes(lab(conn), None, by="instructor")
        message = None
        for _ in range(20):
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)
            if message:
                break
    assert sorted(report.reset) == sorted([registered, held_only, room.sandbox]) and report.failed == {}
    for sandbox in report.reset:
        assert (await snapshot_of(conn, "fanin", sandbox)).readout.startswith("0 of 3 children complete")
    assert message is not None
    told = json.loads(message["data"])
    assert told["type"] == "reset" and told["sandboxes"] is None and told["data"] == {"by": "instructor"}


# -- the same commands however many other sandboxes -----------------------------------------


async def crowd(conn: Conn, n: int) -> None:
    """`n` other sandboxes, admitted and with the fan-in landed (a few at a time)."""
    async def one(i: int) -> None:
        sandbox = f"s{i:010d}"
        await admitted(conn, sandbox)
        await show(conn, "fanin", sandbox)

    for first in range(0, n, 10):
        await asyncio.gather(*(one(i) for i in range(first, min(n, first + 10))))


HANDSHAKE = {"hello", "client|setinfo", "auth", "select", "info", "config|resetstat"}


async def commands_of(conn: Conn, work: Any) -> dict[str, int]:
    """What Valkey ran for `work`, by command (calls inside scripts included)."""
    await conn.config_resetstat()
    await work()
    stats = await conn.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()
            if name.removeprefix("cmdstat_") not in HANDSHAKE}


async def commands_with(conn: Conn, others: int) -> dict[str, dict[str, int]]:
    await conn.flushdb()
    await crowd(conn, others)
    for sandbox in (FRESH, IDLE):
        await use(conn, sandbox)
    # scripts loaded once beforehand, so no count carries a NOSCRIPT reload
    await resets.reset_sandboxes(lab(conn), [FRESH])
    await reaper.delete(conn, catalog(), FRESH)
    return {
        "an instructor's reset": await commands_of(conn, lambda: resets.reset_sandboxes(lab(conn), [IDLE])),
        "a widget's Reset": await commands_of(conn, lambda: act(conn, "fanin", "reset", IDLE)),
        "a removal": await commands_of(conn, lambda: reaper.delete(conn, catalog(), IDLE)),
    }


async def test_a_reset_and_a_removal_send_the_same_commands_with_200_other_sandboxes_as_with_none() -> None:
    with ValkeyProcess() as own:  # nobody else talks to it: its command counts are the work's alone
        conn = aioredis.Redis.from_url(own.url, decode_responses=True)
        try:
            alone = await commands_with(conn, 0)
            crowded = await commands_with(conn, 200)
            assert await conn.zcard(admission.HELD_KEY) == 200  # the crowd was there all along
        finally:
            await conn.aclose()
    assert all(alone.values()), alone  # the counts saw the work
    assert crowded == alone


# -- on the running site ------------------------------------------------------------------


def test_the_sites_own_reaper_removes_an_idle_sandbox_and_its_visitor_starts_afresh() -> None:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_REAP_EVERY": "1"}) as site:
        visitor = site.visitor()
        sandbox = sandbox_of(visitor)
        assert visitor.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
        r = site.redis()
        r.zadd(REGISTRY_KEY, {sandbox: 1})  # idle since the epoch
        deadline = time.monotonic() + 10
        while r.exists(keys.progress_key(sandbox)) or r.keys(f"emq:{{{sandbox}.*"):
            assert time.monotonic() < deadline, "the reaper did not remove the idle sandbox"
            time.sleep(0.1)
        answer = visitor.get("/api/widgets/fanin/state")
        assert answer.status_code == 200
        assert answer.json()["snapshot"]["readout"].startswith("0 of 3 children complete")
        assert r.zscore(REGISTRY_KEY, sandbox) is not None


def test_start_over_is_a_reset_of_the_learners_own_sandbox_that_also_forgets_the_record(
    clean: LiveSite,
) -> None:
    visitor = clean.visitor()
    sandbox = sandbox_of(visitor)
    assert visitor.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    assert visitor.post("/api/console", json={"command": "SET emq:{fanin}:my-note hi"}).status_code == 200
    r = clean.redis()
    done = visitor.post("/progress/start-over", data={"confirm": "yes"}, follow_redirects=False)
    assert done.status_code == 303
    assert not r.exists(keys.progress_key(sandbox)) and not r.exists(f"emq:{{{sandbox}.fanin}}:my-note")
    assert visitor.get("/api/console").json()["transcript"] == []
    assert visitor.get("/api/widgets/fanin/state").json()["snapshot"]["readout"].startswith("0 of 3")
