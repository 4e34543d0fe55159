"""Poison a console could push into a learner's own `flow:outbox`, judged as it was before the
outbox entry became a msgspec Struct (5dcb033: `json.loads`, then each of the seven fields checked).

An entry whose seven fields are all well formed was deliverable whatever else its JSON held (an
extra field holding NaN, a field named twice with the valid value last: Python's json reads both,
the last value wins, as cjson's does); a nesting deep enough to exhaust the decoder is poison, never
an error out of a Pump tick (a widget's 500). Real Valkey, the outbox widget driven as a click is.

The console itself refuses every direct write to a `flow:outbox` (RPUSH, LSET, LMOVE, RENAME, COPY, EVAL
…; only `complete` and `fail` append, through cjson): these entries are written by the admin
connection, as a console that let one through, or a script of the course's with a bug, would.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from server.emq import keyspace
from server.widgets.outbox import PARENT
from tests import widgets

W, SANDBOX = "outbox", "s0b0b0b0b0b"
MAIL = f"{SANDBOX}.outbox.mail"
GOOD = json.dumps({"kind": "completed", "child": "JOBmail1", "child_queue": MAIL, "value": "v", "parent": PARENT,
                   "parent_queue": f"{SANDBOX}.outbox.orders", "policy": "fp"})


async def head_verdict(conn: Any) -> dict[str, str]:
    lanes = (await widgets.snapshot_of(conn, W, SANDBOX)).picture["queues"]
    return next(lane["outbox"][0] for lane in lanes if lane.get("outbox"))


@pytest.mark.parametrize("entry", [GOOD[:-1] + ',"extra":NaN}', '{"kind":"exploded",' + GOOD[1:]],
                         ids=["nan-in-an-extra-field", "a-field-twice-the-valid-value-last"])
async def test_an_entry_whose_seven_fields_are_well_formed_is_delivered_as_before(conn: Any, entry: str) -> None:
    await widgets.show(conn, W, SANDBOX)
    await conn.rpush(keyspace.outbox_key(MAIL), entry)
    assert await head_verdict(conn) == {"verdict": "waiting",
                                        "text": f"completed JOBmail1 → {PARENT}, waiting for the Pump"}
    tick = await widgets.act(conn, W, "pump-tick", SANDBOX)
    assert "outbox.mail: 1 delivered, 1 trimmed" in tick.outcome["text"]


async def test_an_entry_nested_past_the_decoders_depth_is_poison_not_an_error(conn: Any) -> None:
    await widgets.show(conn, W, SANDBOX)
    # One short EVAL (the admin's: the console refuses EVAL) builds the 6 KB entry inside Valkey.
    await conn.eval("return redis.call('RPUSH', KEYS[1], ARGV[1] .. string.rep('[', 3000) .. string.rep(']', 3000)"
                    " .. '}')", 1, keyspace.outbox_key(MAIL), GOOD[:-1] + ',"extra":')
    # the picture reads an entry's first KB: one that does not decode there is left to the Pump, which
    # reads it whole and says it is poison
    assert (await head_verdict(conn))["verdict"] == "unread"
    tick = await widgets.act(conn, W, "pump-tick", SANDBOX)
    assert "stopped at a poison entry (it does not decode), 0 trimmed" in tick.outcome["text"]
    aged = await widgets.act(conn, W, "aged-pump-tick", SANDBOX)
    assert "its head still blocks, counted 1 of" in aged.outcome["text"]


FP, FP_MAIL, FP_HOME = "failure-policy", f"{SANDBOX}.failure-policy.mail", f"{SANDBOX}.failure-policy"
FP_GOOD = json.dumps({"kind": "failed", "child": "JOBremote", "child_queue": FP_MAIL, "value": "boom",
                      "parent": "JOBlinked", "parent_queue": FP_HOME, "policy": "fp"})


@pytest.mark.parametrize(("entry", "said"), [
    (FP_GOOD[:-1] + ',"extra":NaN}', "The Pump delivered 1 from mail's outbox on JOBlinked's slot"),
    ('{"kind":"exploded",' + FP_GOOD[1:], "The Pump delivered 1 from mail's outbox on JOBlinked's slot"),
    (FP_GOOD[:-1] + ',"extra":' + "[" * 3000 + "]" * 3000 + "}",
     "The Pump stopped at the head of mail's outbox, poison (it does not decode)"),
], ids=["nan-in-an-extra-field", "a-field-twice-the-valid-value-last", "nested-past-the-decoders-depth"])
async def test_the_failure_policy_pump_says_what_it_said_before(conn: Any, entry: str, said: str) -> None:
    await widgets.show(conn, FP, SANDBOX)
    await widgets.act(conn, FP, "mixed", SANDBOX)
    await conn.rpush(keyspace.outbox_key(FP_MAIL), entry)
    assert said in (await widgets.act(conn, FP, "pump", SANDBOX)).outcome["text"]


async def test_an_entry_longer_than_the_snapshots_cut_is_not_said_to_be_poison_when_the_pump_delivers_it(
    conn: Any,
) -> None:
    """A learner's console `complete` (xq) with a 900-byte result (under the 1024-byte argument cap)
    writes a good entry past read.lua's 1024-byte cut of a value: the picture judged the cut text
    ('poison (it does not decode)') while the Pump tick delivered the entry whole. Before the cuts too."""
    await widgets.show(conn, W, SANDBOX)
    await conn.rpush(keyspace.outbox_key(MAIL), GOOD.replace('"v"', '"' + "x" * 900 + '"'))
    assert (await head_verdict(conn))["verdict"] != "poison"
    tick = await widgets.act(conn, W, "pump-tick", SANDBOX)
    assert "outbox.mail: 1 delivered, 1 trimmed" in tick.outcome["text"]
