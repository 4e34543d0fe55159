"""The effects log's words: each write said by what its key is for."""

from __future__ import annotations

import pytest

from server.live.effects import command, describe, role

Q = "emq:{s0000000000.fanin}"


@pytest.mark.parametrize(
    "event,suffix,words",
    [
        ("incrby", ":job:JOBparent:dependencies", "one fewer outstanding child"),
        ("set", ":job:JOBparent:dependencies", "set the count of outstanding children"),
        ("hset", ":job:JOBparent:processed", "recorded the child's result"),
        ("hset", ":job:JOBparent:ignored", "recorded the failed child's error (ignored dependency)"),
        ("zpopmin", ":pending", "a claim took the lowest-scored job out of pending"),
        ("zadd", ":active", "a claim leased the job: it entered active"),
        ("zrem", ":active", "the job left active (completed or failed)"),
        ("zadd", ":dead", "a job died: it entered dead, the morgue"),
        ("del", ":job:JOBchild1", "the job's row is retired"),
        ("hincrby", ":metrics:completed", "one more completion counted"),
        ("rpush", ":flow:outbox", "a cross-queue note joined the outbox, for the Pump"),
        ("rpush", ":flow:outbox:poison", "an entry that blocked the outbox was set aside"),
        ("hincrby", ":flow:outbox:head", "the aged Pump counted one more blocked tick"),
    ],
)
def test_a_write_is_said_by_its_key_suffix_and_its_verb(event: str, suffix: str, words: str) -> None:
    assert describe(event, Q + suffix) == words


def test_an_unknown_pairing_falls_back_to_the_verb_and_an_unknown_verb_to_its_name() -> None:
    assert describe("hdel", Q + ":pending") == "removed hash fields"
    assert describe("xadd", Q + ":pending") == "xadd"


def test_a_job_id_that_looks_like_a_suffix_is_still_a_row() -> None:
    assert role(Q + ":job:pending") == "row"
    assert role(Q + ":job:JOBx:dependencies") == "counter"
    assert role("lab:{s0000000000.fanin}:state") is None


def test_the_log_names_the_scripts_decr_though_valkey_notifies_it_as_incrby() -> None:
    assert command("incrby", Q + ":job:JOBparent:dependencies") == "decr"
    assert command("incrby", Q + ":other") == "incrby"  # a key the course does not count down: as notified
    assert command("zadd", Q + ":pending") == "zadd"
