"""Console KEYS and SCAN cost what the sandbox holds, not what Valkey holds: they are
answered from the sandbox's own keys (found by name, as a Reset finds them), never by
walking the keyspace, and the work is the same with 20,000 other keys in Valkey."""

from __future__ import annotations

from typing import Any

from bench.wire import WireCount
from server.console.as_user import Runner

from .support import QUEUES, B, console, land_fanin, line

OTHERS = 20_000


async def calls_of(admin: Any, command: str) -> int:
    """How many times Valkey ran `command`, from clients and inside scripts alike."""
    stats = await admin.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def fill_others(admin: Any) -> None:
    async with admin.pipeline(transaction=False) as pipe:
        for i in range(OTHERS):
            pipe.set(f"emq:{{s{i:010d}.fanin}}:job:JOBx{i}", "x")
        await pipe.execute()


async def test_keys_and_scan_answer_the_sandboxs_own_keys_without_a_scan(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, B)
    visitor = console(admin, runner, B)
    assert (await line(visitor, "SET emq:{outbox.mail}:note hello")).status == 200
    await fill_others(admin)
    scans, keys = await calls_of(admin, "scan"), await calls_of(admin, "keys")
    assert (await line(visitor, "KEYS emq:{native}:*")).lines == ("(empty array)",)  # the script loaded once
    with WireCount(B) as wire:
        listed = await line(visitor, "KEYS *")
    assert listed.lines == (
        '1) "emq:{fanin}:job:JOBchild1"', '2) "emq:{fanin}:job:JOBchild2"', '3) "emq:{fanin}:job:JOBchild3"',
        '4) "emq:{fanin}:job:JOBparent"', '5) "emq:{fanin}:job:JOBparent:dependencies"',
        '6) "emq:{fanin}:pending"', '7) "emq:{outbox.mail}:note"')
    # one round trip: one read-only script per queue of the sandbox, nothing else
    assert wire.round_trips == 1 and wire.names == ["EVALSHA"] * len(QUEUES), wire.names
    typed = await line(visitor, "SCAN 0 MATCH emq:{fanin}:job:JOB[cp]* TYPE hash")
    assert typed.lines == ('1) "0"', '2) 1) "emq:{fanin}:job:JOBchild1"', '   2) "emq:{fanin}:job:JOBchild2"',
                           '   3) "emq:{fanin}:job:JOBchild3"', '   4) "emq:{fanin}:job:JOBparent"')
    assert (await calls_of(admin, "scan"), await calls_of(admin, "keys")) == (scans, keys)


async def test_the_work_of_keys_does_not_grow_with_other_sandboxes_keys(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, B)
    visitor = console(admin, runner, B)
    assert (await line(visitor, "KEYS *")).status == 200  # the scripts loaded once
    before = await calls_of(admin, "type")
    assert (await line(visitor, "KEYS *")).status == 200
    alone = await calls_of(admin, "type") - before
    await fill_others(admin)
    before = await calls_of(admin, "type")
    assert (await line(visitor, "KEYS *")).status == 200
    assert await calls_of(admin, "type") - before == alone  # the same keys looked at, 20,000 more or not
    assert alone < 200
