"""The outbox widget's Pump at the sandbox boundary, on a real Valkey.

An outbox entry is data in the learner's own keys, which a console can
write. One crafted in sandbox B's outbox naming sandbox A's parent queue
(written here by the admin connection, hidden behind a JSON `\\u0073`
escape) is refused by every Pump B's widget runs, plain, crashed or aged,
and said to be refused in words; sandbox A is compared byte for byte
(DUMP of each of its keys) before and after.
"""

from __future__ import annotations

from typing import Any

from server.emq import keyspace, pump, results
from server.widgets.outbox import MAX_BLOCKED, PARENT
from tests import widgets
from tests.integration.keystates import dumps

W = "outbox"


def q(part: str, sandbox: str) -> str:
    return f"{sandbox}.outbox.{part}"


async def deps(conn: Any, sandbox: str) -> int:
    return await results.dependencies(conn, q("orders", sandbox), PARENT)


async def test_an_entry_naming_another_sandbox_is_refused_and_that_sandbox_stays_byte_identical(conn: Any) -> None:
    victim, learner = "s0a0a0a0a0a", "s0b0b0b0b0b"
    for sandbox in (victim, learner):
        await widgets.show(conn, W, sandbox)
    await widgets.act(conn, W, "complete-child", victim)  # the victim mid-story: an entry of its own waits
    before = await dumps(conn, victim)
    assert any("outbox.orders" in name for name in before)
    # Written by the admin connection, as a console that let it through would:
    # the `\u0073` escape hides the victim's queue name from a raw-text check.
    hidden = "\\u0073" + victim[1:]
    crafted = [(f'{{"kind":"{kind}","child":"JOBmail1","child_queue":"{q("mail", learner)}","value":"pwned",'
                f'"parent":"{PARENT}","parent_queue":"{hidden}.outbox.orders","policy":"fp"}}') for kind in
               ("completed", "completed", "completed", "failed")]
    assert pump.decode_entry(crafted[0]).parent_queue == q("orders", victim)
    await conn.rpush(keyspace.outbox_key(q("mail", learner)), *crafted)
    lane = (await widgets.snapshot_of(conn, W, learner)).picture["queues"][0]
    assert lane["outbox"][0] == {"verdict": "refused", "text": "refused: completed JOBmail1 → JOBparent, but its "
                                 "parent queue is outside your sandbox"}
    assert "outbox.mail: 4 refused; its head blocks" in (await widgets.snapshot_of(conn, W, learner)).readout
    tick = await widgets.act(conn, W, "pump-tick", learner)
    assert "stopped at an entry it refused (its parent queue is outside your sandbox), 0 trimmed" in \
        tick.outcome["text"]
    await widgets.act(conn, W, "crash-before-trim", learner)
    for _ in range(3 * (MAX_BLOCKED + 1)):  # long enough for the aged Pump to set all four aside
        await widgets.act(conn, W, "aged-pump-tick", learner)
    assert await conn.lrange(keyspace.poison_key(q("mail", learner)), 0, -1) == crafted
    assert await dumps(conn, victim) == before
    assert await deps(conn, victim) == 3
    aside = (await widgets.snapshot_of(conn, W, learner)).picture["queues"][0]["poison"]
    assert [p["verdict"] for p in aside] == ["refused"] * 4
