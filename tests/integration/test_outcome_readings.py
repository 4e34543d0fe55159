"""An outcome's sentence names values read by the step that records it
(`queue_keys.lua`, mode `finish`): what the clicking page is answered and
what every other page reads from the lab hash are the same words, with the
numbers Valkey held when the action ended."""

from __future__ import annotations

import json

import pytest
from redis.exceptions import ResponseError

from server.emq import keyspace
from server.widgets import turn
from server.widgets.base import Outcome, Reading
from server.widgets.fanin import PARENT

from .conftest import SANDBOX, landed_widget

Q = f"{SANDBOX}.fanin"


@pytest.fixture
async def landed(conn):
    return await landed_widget(conn, "fanin")


async def test_the_answer_and_the_lab_hash_carry_the_counter_read_when_the_outcome_was_recorded(landed, conn) -> None:
    widget, ctx = landed
    outcome, snap = await widget.run(ctx, "complete-child", {})
    stored = json.loads(await conn.hget(f"lab:{{{Q}}}:state", "outcome"))
    assert outcome.text == stored["text"] == snap["outcome"]["text"]
    assert "{{" not in outcome.text
    assert outcome.text.endswith(":dependencies fell from 3 to 2; the parent is still held.")
    assert await conn.get(keyspace.dependencies_key(Q, PARENT)) == "2"
    # a "{{=name}}" detail value is the bare value: a number, or the state as a string
    assert outcome.detail["dependencies"] == 2 and outcome.detail["parent_state"] == "awaiting_children"


async def test_the_last_completion_words_the_released_parent_from_its_row(landed, conn) -> None:
    widget, ctx = landed
    for _ in range(3):
        outcome, _snap = await widget.run(ctx, "complete-child", {})
    assert outcome.text.endswith(":dependencies fell from 1 to 0; the parent is released into pending.")
    assert await conn.hget(keyspace.job_key(Q, PARENT), "state") == "pending"


async def test_a_reading_outside_the_widgets_queue_is_refused_and_nothing_is_recorded(landed, conn) -> None:
    widget, ctx = landed
    before = await conn.hgetall(f"lab:{{{Q}}}:state")
    token = await widget.begin(ctx, None)
    sneaky = Outcome("{{other}}", reads={"other": Reading(("GET", "lab:{s0000000000}:meta"))})
    with pytest.raises(ResponseError, match="a reading must be"):
        await turn.finish(widget, ctx, token, turn.record(widget, ctx, "claim", sneaky), sneaky)
    assert await conn.hgetall(f"lab:{{{Q}}}:state") == before
    await widget.release(ctx, token)


async def test_a_replayed_step_fills_its_readings_without_recording_an_outcome(landed, conn) -> None:
    widget, ctx = landed
    outcome = await widget.perform_and_keep(ctx, "complete-child", {})
    assert outcome.text.endswith(":dependencies fell from 3 to 2; the parent is still held.")
    assert outcome.reads == {}
    assert await conn.hget(f"lab:{{{Q}}}:state", "outcome") is None
