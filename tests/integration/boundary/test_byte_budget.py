"""A sandbox's console writes stop at its byte budget: refused in words (409),
nothing written, and what Valkey holds for the sandbox stays near the budget:
the budget charges Valkey's MEMORY USAGE of the keys written, not the bytes
typed; a Reset of a queue gives its share back; a write's round trips counted."""

from __future__ import annotations

from typing import Any

from bench.wire import WireCount
from server.console import budget
from server.console.as_user import Runner
from server.sandboxes import admission, keys

from .support import QUEUES, B, console, held_by, line, names

VALUE = "x" * 1000  # about 1 KB a field


async def memory_of(admin: Any, sandbox: str) -> int:
    keys = [*await names(admin, f"emq:{{{sandbox}.*"), *await names(admin, f"lab:{{{sandbox}*")]
    total = 0
    for key in keys:
        total += int(await admin.memory_usage(key, samples=0) or 0)
    return total


async def reset_queue(admin: Any, sandbox: str, queue: str) -> None:
    """What a widget's Reset does to its queue: every key of it, the lab keys too."""
    for prefix in ("emq", "lab"):
        for key in await names(admin, f"{prefix}:{{{sandbox}.{queue}}}:*"):
            await admin.delete(key)


async def test_a_console_flood_stops_at_the_budget_and_the_sandbox_stays_near_one_mb(
    admin: Any, runner: Runner
) -> None:
    visitor = console(admin, runner, B)
    accepted = 0
    while True:
        text = f"HSET emq:{{fanin}}:job:JOBflood{accepted % 8} field{accepted} {VALUE}"
        # What the refused line is compared with, taken only where it can come (a refusal before
        # line 900 fails the count below): a DUMP of the whole sandbox before every line cost 50 s under load.
        before = await held_by(admin, B) if accepted >= 900 else {}
        answer = await line(visitor, text)
        if answer.status != 200:
            break
        accepted += 1
    assert answer.status == 409 and answer.refused is not None and answer.refused.reason == "over-budget"
    assert answer.refused.message.startswith("This sandbox holds about 1 MB already: press Reset on a widget")
    assert 900 <= accepted <= 1024
    assert await held_by(admin, B) == before  # the refused line wrote nothing, not even its count
    assert await budget.spent(admin, B, QUEUES) <= budget.DEFAULT_BUDGET
    assert 900_000 < await memory_of(admin, B) < 1_100_000  # what Valkey holds, not what was typed


async def test_the_budget_charges_what_valkey_reports_not_the_bytes_typed(admin: Any, runner: Runner) -> None:
    # Small members typed, a skiplist zset held: Valkey's bytes are several times the typed ones.
    visitor = console(admin, runner, B, budget=64 * 1024)
    typed, n = 0, 0
    while True:
        members = " ".join(f"{i} JOBp{i}" for i in range(n, n + 30))
        text = f"ZADD emq:{{fanin}}:pending {members}"
        before = await held_by(admin, B)
        answer = await line(visitor, text)
        if answer.status != 200:
            break
        typed, n = typed + len(text), n + 30
    assert answer.status == 409 and await held_by(admin, B) == before  # refused: nothing written
    held = int(await admin.memory_usage(f"emq:{{{B}.fanin}}:pending", samples=0) or 0)
    charged = await budget.spent(admin, B, QUEUES)
    assert charged == held  # the sum of MEMORY USAGE of the keys written: here the one zset
    assert typed * 2 < charged  # typed bytes would have let in twice as much and more
    # checked before each write, weighed after it: the write that crossed the budget was the last
    assert 60 * 1024 < charged < 72 * 1024


async def test_a_rewrite_adds_nothing_and_a_delete_gives_its_bytes_back(admin: Any, runner: Runner) -> None:
    visitor = console(admin, runner, B, budget=16 * 1024)
    assert (await line(visitor, f"SET emq:{{fanin}}:note {VALUE}")).status == 200
    first = await budget.spent(admin, B, QUEUES)
    for _ in range(50):  # the same key and value again and again: Valkey holds no more
        assert (await line(visitor, f"SET emq:{{fanin}}:note {VALUE}")).status == 200
    assert await budget.spent(admin, B, QUEUES) == first
    assert (await line(visitor, "DEL emq:{fanin}:note")).status == 200
    assert await budget.spent(admin, B, QUEUES) == 0


async def test_a_console_write_costs_five_round_trips_and_six_with_a_new_name(admin: Any, runner: Runner) -> None:
    door = admission.Door(admission.Limits(cap=100))
    visitor = console(admin, runner, B, door=door)
    # once per server, not per line: the scripts loaded, the sandbox's ACL user made
    assert (await line(visitor, "SET emq:{native}:warm up")).status == 200
    with WireCount(B) as wire:
        assert (await line(visitor, "HSET emq:{fanin}:job:JOBnew note hello")).status == 200
    # the lock; the admission with the budget's reads; the name indexed; the line as the sandbox's
    # user; the weighing; the lock let go
    assert wire.round_trips == 6, str(wire.names)
    assert wire.names.count("EVALSHA") == 3 and wire.names.count("HGET") == len(QUEUES), wire.names
    with WireCount(B) as again:
        assert (await line(visitor, "HSET emq:{fanin}:job:JOBnew note again")).status == 200
    assert again.round_trips == 5, again.names  # a listed name: no index write
    assert again.commands == wire.commands - 1, again.names
    assert await admin.zscore(admission.REGISTRY_KEY, B) is not None  # admitted by the line itself


async def test_the_budget_is_the_sandboxs_and_a_queues_reset_gives_its_share_back(admin: Any, runner: Runner) -> None:
    visitor = console(admin, runner, B, budget=8192)
    while (await line(visitor, f"RPUSH emq:{{outbox.mail}}:job:JOBm:logs {VALUE}")).status == 200:
        pass
    # another queue, the same sandbox's budget: a line as long as the last accepted one is refused
    refused = await line(visitor, f"HSET emq:{{fanin}}:job:JOBn a {VALUE} b {VALUE}")
    assert refused.status == 409
    await reset_queue(admin, B, "outbox.mail")
    assert (await line(visitor, "SET emq:{fanin}:note hello")).status == 200
    assert await admin.get(f"emq:{{{B}.fanin}}:note") == "hello"


async def test_reads_cost_nothing(admin: Any, runner: Runner) -> None:
    visitor = console(admin, runner, B, budget=budget.OVERHEAD + 40)
    for _ in range(20):
        assert (await line(visitor, "GET emq:{fanin}:note")).status == 200
    assert (await line(visitor, "SET emq:{fanin}:note hi")).status == 200
    assert (await line(visitor, "SET emq:{fanin}:note hi")).status == 409


async def test_extra_names_are_indexed_for_the_widget_and_capped_per_queue(admin: Any, runner: Runner) -> None:
    visitor = console(admin, runner, B)
    assert (await line(visitor, "SET emq:{fanin}:note hello")).status == 200
    assert (await line(visitor, "ZADD emq:{fanin}:pending 1 JOBx")).status == 200
    index = keys.index_key(f"{B}.fanin")
    assert await admin.smembers(index) == {f"emq:{{{B}.fanin}}:note"}
    for i in range(budget.INDEX_CAP - 1):
        assert (await line(visitor, f"SET emq:{{fanin}}:n{i} v")).status == 200
    before = await held_by(admin, B)
    refused = await line(visitor, "SET emq:{fanin}:one-too-many v")
    assert refused.status == 409 and "at most 64 new keys" in refused.lines[0]
    assert await held_by(admin, B) == before
    assert (await line(visitor, "SET emq:{fanin}:note again")).status == 200  # a name already listed
