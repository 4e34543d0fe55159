"""The cross-queue outbox widget on a real Valkey, driven as clicks drive it
(tests/widgets.py: the executor, its lock and its record). Every assertion
reads the keys the actions left, and every sentence is checked against them."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from server.emq import keyspace, pump, results
from server.widgets import questions
from server.widgets.base import Body, Refused
from server.widgets.outbox import MAX_BLOCKED, MAX_ENTRIES, PARENT, POISON, Outbox
from server.widgets.reader import read
from server.widgets.turn import Actor, Turn
from tests import widgets
from tests.integration.keystates import dumps, reachable, replay, states

SANDBOX = widgets.SANDBOX
W = "outbox"


def q(part: str, sandbox: str = SANDBOX) -> str:
    return f"{sandbox}.outbox.{part}"


async def deps(conn: Any, sandbox: str = SANDBOX) -> int:
    return await results.dependencies(conn, q("orders", sandbox), PARENT)


async def outbox(conn: Any, part: str, sandbox: str = SANDBOX) -> list[str]:
    return list(await conn.lrange(keyspace.outbox_key(q(part, sandbox)), 0, -1))


async def readout_is_true(conn: Any, sandbox: str = SANDBOX) -> str:
    """The snapshot's readout, each of its facts checked against the raw keys."""
    readout = (await widgets.snapshot_of(conn, W, sandbox)).readout
    home = q("orders", sandbox)
    processed = await conn.hkeys(keyspace.processed_key(home, PARENT))
    counted = len(set(processed) & {"JOBmail1", "JOBbilling1", "JOBmail2"})
    assert f"{counted} of 3 children counted on the parent's slot" in readout, readout
    assert f":dependencies = {await deps(conn, sandbox)}" in readout, readout
    for part in ("mail", "billing"):
        entries = await outbox(conn, part, sandbox)
        segment = re.search(rf"outbox\.{part}: ([^;→]*)", readout)
        assert segment is not None, readout
        if not entries:
            assert segment.group(1).strip() == "empty", readout
            continue
        said = {kind: int(n) for n, kind in re.findall(
            r"(\d+) (waiting|delivered, not yet trimmed|poison|refused)", segment.group(1))}
        assert sum(said.values()) == len(entries), (readout, entries)
        assert said.get("poison", 0) == sum(1 for e in entries if not _decodes(e)), readout
        foreign = sum(1 for e in entries if _decodes(e) and not json.loads(e)["parent_queue"].startswith(sandbox + "."))
        assert said.get("refused", 0) == foreign, readout
    state = await conn.hget(keyspace.job_key(home, PARENT), "state")
    if state == "awaiting_children":
        assert "the parent stays held (awaiting_children), in no state set" in readout
        assert await conn.zscore(keyspace.queue_key(home, "pending"), PARENT) is None
    elif state == "pending":
        assert "the parent is released: state pending, in pending" in readout
        assert await conn.zscore(keyspace.queue_key(home, "pending"), PARENT) is not None
    return readout


def _decodes(raw: str) -> bool:
    try:
        pump.decode_entry(raw)
    except pump.PoisonEntry:
        return False
    return True


@pytest.fixture
async def landed(conn: Any) -> Any:
    await widgets.show(conn, W)
    return conn


async def test_landing_holds_the_parent_on_one_slot_and_its_children_on_two_others(landed: Any) -> None:
    conn = landed
    assert await conn.hget(keyspace.job_key(q("orders"), PARENT), "state") == "awaiting_children"
    assert await deps(conn) == 3
    assert await conn.zrange(keyspace.queue_key(q("mail"), "pending"), 0, -1) == ["JOBmail1", "JOBmail2"]
    assert await conn.hget(keyspace.job_key(q("billing"), "JOBbilling1"), "parent_queue") == q("orders")
    snap = await widgets.snapshot_of(conn, W)
    assert len({view["slot"] for view in snap.queues}) == 3
    assert [lane["part"] for lane in snap.picture["queues"]] == ["outbox.mail", "outbox.billing"]
    assert snap.picture["parent"]["queue"] == "outbox.orders" and SANDBOX not in json.dumps(snap.picture["parent"])
    assert await readout_is_true(conn)


async def test_a_completion_waits_in_its_own_queues_outbox_while_the_counter_stays(landed: Any) -> None:
    conn = landed
    acted = await widgets.act(conn, W, "complete-child")
    assert acted.outcome["reached"] == ["emitted"] and "appended an entry to outbox.mail's flow:outbox" in \
        acted.outcome["text"]
    entries = [pump.decode_entry(e) for e in await outbox(conn, "mail")]
    assert [(e.kind, e.child, e.parent, e.parent_queue) for e in entries] == [
        ("completed", "JOBmail1", PARENT, q("orders"))]
    assert await deps(conn) == 3
    lane = (await widgets.snapshot_of(conn, W)).picture["queues"][0]
    assert lane["outbox"] == [{"text": "completed JOBmail1 → JOBparent, waiting for the Pump", "verdict": "waiting"}]
    assert "outbox.mail: 1 waiting" in await readout_is_true(conn)


async def test_pump_ticks_deliver_each_completion_and_release_the_parent_at_zero(landed: Any) -> None:
    conn = landed
    for expected in (2, 1, 0):
        await widgets.act(conn, W, "complete-child")
        tick = await widgets.act(conn, W, "pump-tick")
        assert tick.outcome["reached"] == ["delivered"] and "1 delivered, 1 trimmed" in tick.outcome["text"]
        assert await deps(conn) == expected
        await readout_is_true(conn)
    assert await conn.zrange(keyspace.queue_key(q("orders"), "pending"), 0, -1) == [PARENT]
    assert await results.children_values(conn, q("orders"), PARENT) == {
        "JOBmail1": "mail done", "JOBbilling1": "billing done", "JOBmail2": "mail done"}


async def test_a_crash_before_trim_then_a_tick_delivers_twice_and_counts_once(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "complete-child")
    crash = await widgets.act(conn, W, "crash-before-trim")
    assert crash.outcome["kind"] == "refused" and crash.outcome["reached"] == ["crashed"]
    assert "1 delivered, nothing trimmed" in crash.outcome["text"]
    assert len(await outbox(conn, "mail")) == 1 and await deps(conn) == 2
    assert "outbox.mail: 1 delivered, not yet trimmed" in await readout_is_true(conn)
    tick = await widgets.act(conn, W, "pump-tick")
    assert tick.outcome["reached"] == ["duplicate"] and tick.outcome["detail"]["duplicates"] == 1
    assert "a duplicate the HSETNX guard refused" in tick.outcome["text"]
    assert await deps(conn) == 2 and await outbox(conn, "mail") == []
    assert await results.children_values(conn, q("orders"), PARENT) == {"JOBmail1": "mail done"}


async def test_a_poison_head_blocks_until_the_aged_tick_sets_it_aside(landed: Any) -> None:
    conn = landed
    poison = await widgets.act(conn, W, "add-poison")
    assert poison.outcome["kind"] == "info" and "not EchoMQ" in poison.outcome["text"]
    await widgets.act(conn, W, "complete-child")  # JOBmail1's entry lands behind it
    assert (await outbox(conn, "mail"))[0] == POISON
    tick = await widgets.act(conn, W, "pump-tick")
    assert tick.outcome["reached"] == ["blocked"] and "stopped at a poison entry" in tick.outcome["text"]
    assert await deps(conn) == 3 and "its head blocks" in await readout_is_true(conn)
    for n in range(1, MAX_BLOCKED + 1):
        aged = await widgets.act(conn, W, "aged-pump-tick")
        assert aged.outcome["reached"] == ["aged"] and f"counted {n} of {MAX_BLOCKED}" in aged.outcome["text"]
        assert await conn.hget(keyspace.outbox_head_key(q("mail")), "count") == str(n)
        assert f"(blocked {n} of {MAX_BLOCKED} aged ticks)" in await readout_is_true(conn)
    aged = await widgets.act(conn, W, "aged-pump-tick")
    assert aged.outcome["reached"] == ["aside", "delivered"]
    assert await conn.lrange(keyspace.poison_key(q("mail")), 0, -1) == [POISON]
    assert await outbox(conn, "mail") == [] and await deps(conn) == 2
    assert "1 entry set aside on a poison list" in await readout_is_true(conn)


async def test_an_empty_outbox_says_what_is_true_before_and_after_the_story(landed: Any) -> None:
    conn = landed
    start = await widgets.act(conn, W, "pump-tick")
    assert start.outcome["text"] == ("Both outboxes are empty, so the Pump had nothing to deliver. "
                                     "Complete a child first.")
    for _ in range(3):
        await widgets.act(conn, W, "complete-child")
    await widgets.act(conn, W, "pump-tick")
    assert await conn.hget(keyspace.job_key(q("orders"), PARENT), "state") == "pending"
    for slug in ("pump-tick", "aged-pump-tick"):
        done = await widgets.act(conn, W, slug)
        assert done.outcome["text"].endswith("All three completions have been delivered.")
        assert "Complete a child first" not in done.outcome["text"]
    nothing = await widgets.act(conn, W, "complete-child")
    assert nothing.outcome["text"].endswith("nothing to claim. Press Reset to start again.")


async def test_the_poison_cap_answers_in_words_and_writes_nothing(landed: Any) -> None:
    conn = landed
    for _ in range(MAX_ENTRIES):
        await widgets.act(conn, W, "add-poison")
    before = await dumps(conn, SANDBOX)
    with pytest.raises(Refused, match=f"the cap of {MAX_ENTRIES}: nothing was added"):
        await widgets.act(conn, W, "add-poison")
    assert await dumps(conn, SANDBOX) == before


async def test_try_it_as_one_script_on_one_server_is_refused_in_words_and_writes_nothing(landed: Any) -> None:
    conn = landed
    snap = await widgets.snapshot_of(conn, W)
    assert snap.picture["cluster"] is False
    before = await states(conn, SANDBOX)
    with pytest.raises(Refused, match=r"needs a cluster: .*emqlab serve --cluster"):
        await widgets.act(conn, W, "one-script")
    assert await states(conn, SANDBOX) == before


async def test_try_it_as_one_script_on_a_cluster_shows_crossslot_and_writes_nothing(cluster_conn: Any) -> None:
    conn = cluster_conn
    widget = widgets.WIDGETS[W]
    # Driven on a bare Turn: the executor's read of a widget with several
    # queues pairs the first queue's lab state with each queue's index
    # (server/widgets/turn.py read_calls), which a cluster refuses as
    # CROSSSLOT until the core reads each queue's own; see the port's report.
    turn = Turn(conn, widget, Actor(SANDBOX, SANDBOX))
    await widget.land(turn)
    outcome = await widget.actions["one-script"].fn(widget, turn, Body())
    assert outcome.kind == "refused"
    assert outcome.detail["error"] == "CROSSSLOT Keys in request don't hash to the same slot"
    assert outcome.detail["written"] == 0 and outcome.text.endswith("Nothing was written.")
    assert str(outcome.detail["node"]).startswith("127.0.0.1:")  # the primary that refused it
    assert not await conn.exists(keyspace.job_key(q("orders"), "JOBsolo"))
    assert not await conn.exists(keyspace.job_key(q("mail"), "JOBsolo1"))
    assert await deps(conn) == 3


async def test_each_tour_step_replayed_by_a_deep_link_equals_clicking_its_steps(landed: Any) -> None:
    conn = landed
    tour = Outbox.tour
    for n in range(len(tour) + 1):
        acted = await widgets.act(conn, W, "goto", step=n)
        assert acted.outcome["text"].startswith(f"Step {n} of {len(tour)}")
        clicks = [(slug, body) for step in tour[:n] for slug, body in step.replay]
        clicked = await replay(conn, W, "s1111111111", clicks)
        assert await states(conn, SANDBOX) == clicked
        assert await readout_is_true(conn) == await readout_is_true(conn, "s1111111111")


async def test_the_tour_reaches_each_of_its_milestones_with_the_step_that_names_it(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "reset")
    for step in Outbox.tour:
        reached: set[str] = set()
        for slug, body in step.replay:
            reached |= set((await widgets.act(conn, W, slug, **body)).outcome["reached"])
        assert step.id in reached, (step.id, reached)


@pytest.mark.parametrize("clicks", [
    [("complete-child", {}), ("complete-child", {}), ("pump-tick", {}), ("crash-before-trim", {})],
    [("add-poison", {}), ("complete-child", {}), ("aged-pump-tick", {}), ("pump-tick", {})],
])
async def test_concurrent_clicks_leave_a_state_that_clicking_one_at_a_time_reaches(landed: Any, clicks: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "reset")
    await asyncio.gather(*(widgets.act(conn, W, slug, **body) for slug, body in clicks))
    assert await states(conn, SANDBOX) in await reachable(conn, W, clicks, start=2000)
    await readout_is_true(conn)


async def test_the_readings_measure_what_the_dives_questions_ask(landed: Any) -> None:
    conn = landed
    widget = widgets.WIDGETS[W]
    question = questions.bind(widget, {"id": "outbox-trim", "action": "pump-tick", "legend": "Predict: which entry "
                              "does the Pump trim?", "reading": "trimmed-entry", "when": "blocked-head",
                              "says": "the outboxes as the Pump left them: {value}", "answer": "choice",
                              "choices": [["poison", "The poison head"], ["behind", "The entry behind it"],
                                          ["none", "Neither"]]})
    start = await read(conn, widget, SANDBOX)
    assert widget.measure("child-pending", start, start) is True
    assert widget.measure("entries-waiting", start, start) is False
    assert widget.measure("dependencies", start, start) == 3
    await widgets.act(conn, W, "add-poison")
    await widgets.act(conn, W, "complete-child")
    before = await read(conn, widget, SANDBOX)
    assert widget.measure("blocked-head", before, before) is True
    await widgets.act(conn, W, "pump-tick")
    now = await read(conn, widget, SANDBOX)
    verdict = questions.judge(widget, question, "behind", now, before)
    assert not verdict.right and verdict.truth == "none"  # a plain tick trims nothing past a poison head
    for _ in range(MAX_BLOCKED + 1):
        before = await read(conn, widget, SANDBOX)
        await widgets.act(conn, W, "aged-pump-tick")
    now = await read(conn, widget, SANDBOX)
    assert widget.measure("trimmed-entry", now, before) == "both"  # the head aside AND the one behind delivered
    assert widget.measure("dependencies", now, before) == 2


async def test_a_parent_row_a_console_removed_is_said_and_its_entries_block(landed: Any) -> None:
    conn = landed
    await widgets.act(conn, W, "complete-child")
    await conn.delete(keyspace.job_key(q("orders"), PARENT))  # what the learner's console may do
    readout = await readout_is_true(conn)
    assert readout.endswith("JOBparent has no row in outbox.orders, so no entry for it can deliver: press Reset "
                            "to land the flow again")
    tick = await widgets.act(conn, W, "pump-tick")
    assert "stopped at an entry JOBparent could not take (no parent row), 0 trimmed" in tick.outcome["text"]
    assert len(await outbox(conn, "mail")) == 1 and await deps(conn) == 3
