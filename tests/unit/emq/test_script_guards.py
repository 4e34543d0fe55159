"""The scripts' guards, read from the files alone: every script the console
reaches takes its guards from includes/guards.lua (one rule, one place), and
the key grammar the host checks is the table the scripts check (issue 38)."""

from __future__ import annotations

from server.console.plan import script_names
from server.emq import includes, keyspace, registry

GUARD_WORDS = ("EMQARGS", "EMQTYPE", "EMQDATA", "redis.call('TYPE'")


def test_every_console_reachable_script_takes_the_guards_from_the_include_and_words_none_itself() -> None:
    for name in script_names():
        body = registry.file_source(name)
        assert "guards" in includes.includes_of(body), name
        assert not [word for word in GUARD_WORDS if word in body.split("\n\n", 1)[1]], name


def test_the_host_reads_the_key_grammar_from_the_scripts_own_table() -> None:
    assert len(keyspace.GRAMMAR) == 12
    assert {suffix: keyspace.grammar_type(suffix) for suffix in (
        "job:JOBx", "job:JOBx:dependencies", "job:JOBx:processed", "job:JOBx:ignored", "pending", "active",
        "schedule", "dead", "metrics:completed", "flow:outbox:head", "flow:outbox", "flow:outbox:poison",
        "job:a:b", "pendings", "job:")} == {
        "job:JOBx": "hash", "job:JOBx:dependencies": "string", "job:JOBx:processed": "hash",
        "job:JOBx:ignored": "hash", "pending": "zset", "active": "zset", "schedule": "zset", "dead": "zset",
        "metrics:completed": "hash", "flow:outbox:head": "hash", "flow:outbox": "list", "flow:outbox:poison": "list",
        "job:a:b": None, "pendings": None, "job:": None}
