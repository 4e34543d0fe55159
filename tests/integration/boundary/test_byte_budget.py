"""A sandbox's console writes stop at its byte budget: refused in words (409),
nothing written, and what Valkey holds for the sandbox stays near the budget
(MEMORY USAGE of every key of it); a Reset of a queue gives its share back."""

from __future__ import annotations

from typing import Any

from server.console import budget
from server.console.as_user import Runner
from server.sandboxes import keys

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


async def test_a_console_flood_stops_at_the_budget_and_the_sandbox_stays_under_one_and_a_half_mb(
    admin: Any, runner: Runner
) -> None:
    visitor = console(admin, runner, B)
    accepted = 0
    while True:
        text = f"HSET emq:{{fanin}}:job:JOBflood{accepted % 8} field{accepted} {VALUE}"
        before = await held_by(admin, B)
        answer = await line(visitor, text)
        if answer.status != 200:
            break
        accepted += 1
    assert answer.status == 409 and answer.refused is not None and answer.refused.reason == "over-budget"
    assert answer.refused.message.startswith("This sandbox holds about 1 MB already: press Reset on a widget")
    assert await held_by(admin, B) == before  # the refused line wrote nothing, not even its count
    assert 900 <= accepted <= 1024
    assert await budget.spent(admin, B, QUEUES) <= budget.DEFAULT_BUDGET
    assert 900_000 < await memory_of(admin, B) < 1_500_000


async def test_a_flood_of_tiny_writes_is_bounded_by_the_overhead_of_each_line(admin: Any, runner: Runner) -> None:
    visitor = console(admin, runner, B, budget=4096)
    results = [(await line(visitor, "INCR emq:{fanin}:count")).status for _ in range(60)]
    taken = results.index(409)
    assert 4096 // (budget.OVERHEAD + 30) <= taken <= 4096 // budget.OVERHEAD
    assert set(results[taken:]) == {409}
    assert int(await admin.get(f"emq:{{{B}.fanin}}:count")) == taken


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
