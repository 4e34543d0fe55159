"""The key grammar, the id gate, script headers and the stepper's moves, read
from the files alone (no Valkey); what the scripts do on Valkey is in
tests/integration/test_keyspace_and_registry.py."""

from __future__ import annotations

from itertools import pairwise

import pytest
from redis.crc import key_slot

from server.emq import keyspace, registry

BAD_IDS = [
    "JOB{x}", "JOB:x", "JOB*", "JOB\n", "JOBa\nb", "", "J" * 129, "JOB x", "JOBé", None, 7, ["JOB1"], {"JOB1": 1},
]


def test_job_key_follows_the_grammar() -> None:
    assert keyspace.job_key("orders", "JOB1") == "emq:{orders}:job:JOB1"
    assert keyspace.queue_key("orders", "pending") == "emq:{orders}:pending"
    assert keyspace.queue_key("orders", "") == keyspace.base("orders") == "emq:{orders}:"
    assert keyspace.dependencies_key("q", "JOB1") == "emq:{q}:job:JOB1:dependencies"
    assert keyspace.processed_key("q", "JOB1") == "emq:{q}:job:JOB1:processed"
    assert keyspace.ignored_key("q", "JOB1") == "emq:{q}:job:JOB1:ignored"
    assert keyspace.logs_key("q", "JOB1") == "emq:{q}:job:JOB1:logs"
    assert keyspace.outbox_key("q") == "emq:{q}:flow:outbox"
    assert keyspace.poison_key("q") == "emq:{q}:flow:outbox:poison"
    assert keyspace.outbox_head_key("q") == "emq:{q}:flow:outbox:head"
    assert keyspace.job_key("q", "J" * 128).endswith("J" * 128)


@pytest.mark.parametrize("bad", BAD_IDS)
def test_job_key_refuses_ill_formed_ids(bad: object) -> None:
    with pytest.raises(keyspace.BadId):
        keyspace.job_key("q", bad)  # type: ignore[arg-type]
    with pytest.raises(keyspace.BadId):
        keyspace.job_key(bad, "JOB1")  # type: ignore[arg-type]


def test_a_refused_name_stays_refused_after_good_names_were_built() -> None:
    # the key names are cached; a refusal raises every time, and never poisons a good name
    for _ in range(3):
        assert keyspace.job_key("orders", "JOB1") == "emq:{orders}:job:JOB1"
        with pytest.raises(keyspace.BadId):
            keyspace.job_key("orders", "JOB 1")
        with pytest.raises(keyspace.BadId):
            keyspace.base("ord ers")
    assert keyspace.base("orders") == "emq:{orders}:"


def test_hash_slot_matches_the_cluster_rule() -> None:
    for key in ["emq:{orders}:pending", "emq:{a}:job:JOB1", "plain", "{}x", "a{}b{c}", "x{y"]:
        assert keyspace.hash_slot(key) == key_slot(key.encode())
    assert keyspace.hash_slot("emq:{orders}:pending") == keyspace.hash_slot("emq:{orders}:job:JOB9")
    assert keyspace.queue_slot("orders") == keyspace.hash_slot("orders")


def test_every_script_header_parses() -> None:
    expected = {
        "enqueue_flow", "claim", "complete", "hold_parent", "enqueue_flow_child",
        "flow_deliver", "fail", "outbox_trim", "outbox_age_head",
    }
    assert expected <= set(registry.names())
    for name in registry.names():
        doc = registry.doc(name)
        assert doc.name == name and doc.summary
        assert doc.keys and doc.keys[0].startswith("KEYS[1]")
        assert doc.argv and doc.argv[0].startswith("ARGV[1")
        assert any(line.startswith("Returns") for line in doc.returns)
        assert doc.path == registry.script_path(name)
    assert len(registry.doc("enqueue_flow").keys) == 4  # KEYS[1..3] and KEYS[4..]
    assert "EMQKIND" in " ".join(registry.doc("enqueue_flow").returns)


def test_script_path_refuses_other_files() -> None:
    for name in ["../keyspace", "nope", "Enqueue_flow"]:
        with pytest.raises(KeyError):
            registry.script_path(name)


def test_enqueue_flow_has_exactly_four_moves_that_tile_the_body() -> None:
    moves = registry.moves("enqueue_flow")
    assert [(m.number, m.title) for m in moves] == [
        (1, "gate every id"),
        (2, "land each child, claimable"),
        (3, "hold the parent"),
        (4, "set the counter"),
    ]
    lines = registry.script_source("enqueue_flow").splitlines()
    for before, after in pairwise(moves):
        assert before.last_line < after.first_line
        # only blank lines between one move's end and the next marker
        assert all(not line.strip() for line in lines[before.last_line : after.first_line - 1])
    assert moves[-1].last_line == len(lines)
    assert moves[0].text.startswith("-- @move 1: gate every id")
    assert registry.prefix_source("enqueue_flow", 4) == registry.script_source("enqueue_flow")
    # the locals above move 1 are in every prefix
    assert "local parent_id" in registry.prefix_source("enqueue_flow", 1)
    with pytest.raises(ValueError):
        registry.prefix_source("enqueue_flow", 5)
