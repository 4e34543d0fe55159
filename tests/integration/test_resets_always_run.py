"""Resets always run: whatever types a learner's keys hold, a widget's Reset, the
instructor's reset, reset-all and the reaper remove them, and one corrupted
sandbox never fails another's reset (issue 28, item 5)."""

from __future__ import annotations

from typing import Any

import httpx

from server.emq import keyspace
from server.lifecycle import reaper, resets
from server.sandboxes.keys import REGISTRY_KEY
from tests.support import LiveSite, sandbox_of
from tests.widgets import act, catalog, lab, show, snapshot_of

TYPE_CHANGING = "hold_parent 2 emq:{fanin}:job:JOBx emq:{fanin}:pending JOBx p 3"


def test_a_pending_made_a_string_is_said_and_reset_brings_the_fan_in_back(clean: LiveSite) -> None:
    client: httpx.Client = clean.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200
    # the console refuses the line that used to do it (issue 38) ...
    line = client.post("/api/console", json={"command": TYPE_CHANGING})
    assert line.json()["reply_lines"][0].startswith("(error) EMQTYPE hold_parent would write KEYS[2] as a string")
    # ... so the key is made by hand, as an older site's console could
    pending = keyspace.queue_key(f"{sandbox_of(client)}.fanin", "pending")
    direct = clean.redis()
    direct.delete(pending)
    direct.set(pending, "3")
    state = client.get("/api/widgets/fanin/state")
    assert state.status_code == 200
    assert "holds a string where the key grammar has a zset" in state.json()["snapshot"]["problem"]
    refused = client.post("/api/widgets/fanin/complete-child", json={})
    assert refused.status_code == 409 and "Press Reset" in refused.json()["error"]
    assert client.post("/api/widgets/fanin/reset", json={}).status_code == 200
    assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    snap = client.get("/api/widgets/fanin/state").json()["snapshot"]
    assert snap["problem"] is None and snap["readout"].startswith("1 of 3 children complete")


async def corrupt(conn: Any, sandbox: str) -> None:
    await show(conn, "fanin", sandbox)
    pending = keyspace.queue_key(f"{sandbox}.fanin", "pending")
    await conn.delete(pending)
    await conn.set(pending, "not a zset")
    await conn.hset(keyspace.queue_key(f"{sandbox}.fanin", "active"), "a", "hash where a zset belongs")


async def test_reset_all_resets_every_sandbox_when_one_holds_keys_of_the_wrong_types(conn: Any) -> None:
    good, bad = "sgood000000", "sbad0000000"
    await show(conn, "fanin", good)
    await act(conn, "fanin", "complete-child", good)
    await corrupt(conn, bad)
    report = await resets.reset_sandboxes(lab(conn), [good, bad])
    assert sorted(report.reset) == [bad, good] and report.failed == {}
    for sandbox in (good, bad):
        snap = await snapshot_of(conn, "fanin", sandbox)
        assert snap.problem is None
        assert snap.readout.startswith("0 of 3 children complete → :dependencies = 3")
        assert snap.outcome is not None and snap.outcome["by"] == "instructor"


async def test_the_reaper_removes_a_sandbox_whose_keys_hold_the_wrong_types(conn: Any) -> None:
    bad = "sbad0000001"
    await corrupt(conn, bad)
    await conn.zadd(REGISTRY_KEY, {bad: 1})  # idle since the epoch
    done = await reaper.reap(conn, catalog(), ttl_seconds=10)
    assert bad in done["sandboxes"]
    assert await conn.keys(f"*{bad}*") == []
