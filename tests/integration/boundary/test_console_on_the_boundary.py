"""The console's lines on the boundary: issue 28's crafted outbox entry from a
second sandbox, NOPERM in words when a line slips past the host-side checks,
the EMQ module's base, numbers that are not numbers, and a server where the
site may not make ACL users (a real valkey-server with the EMQ module)."""

from __future__ import annotations

import json
from typing import Any

import redis.asyncio as aioredis

from server.console import as_user as acl
from server.console import run
from server.console.allow import RULES
from server.console.as_user import Runner
from server.console.confine import Confinement
from server.console.plan import Plan, script_shas
from server.emq import keyspace, pump, registry

from .support import QUEUES, SECRET, A, B, console, held_by, land_fanin, line, names

# A completion aimed at A's parent, its parent_queue spelt with a JSON escape
# (\u0073 is "s") so that the raw text does not show A's id.
CRAFTED = json.dumps({"kind": "completed", "child": "JOBevil", "child_queue": f"{B}.outbox.mail",
                      "value": "pwned", "parent": "JOBparent", "parent_queue": "@" + A[1:] + ".fanin",
                      "policy": "fp"}).replace("@", "\\u0073")
AGE_HEAD_SHA = next(sha for sha, name in script_shas().items() if name == "outbox_age_head")
ATTACK = [
    f"RPUSH emq:{{outbox.mail}}:junk '{CRAFTED}'",
    f"RPUSH emq:{{outbox.mail}}:flow:outbox '{CRAFTED}'",
    f"LPUSH emq:{{outbox.mail}}:flow:outbox:poison '{CRAFTED}'",
    "outbox_age_head 3 emq:{outbox.mail}:junk emq:{outbox.mail}:flow:outbox:head emq:{outbox.mail}:flow:outbox"
    f" '{CRAFTED}' 0",
    f"EVALSHA {AGE_HEAD_SHA} 3 emq:{{outbox.mail}}:junk emq:{{outbox.mail}}:flow:outbox:head"
    f" emq:{{outbox.mail}}:flow:outbox '{CRAFTED}' 0",
    "outbox_trim 1 emq:{outbox.mail}:flow:outbox x",
    f"HSET emq:{{outbox.mail}}:job:JOBevil parent JOBparent parent_queue '\\u0073{A[1:]}.fanin'",
    f"HSET emq:{{outbox.mail}}:job:JOBevil parent JOBparent parent_queue {A}.fanin",
    "complete 3 emq:{outbox.mail}:active emq:{outbox.mail}:job:JOBevil emq:{outbox.mail}:flow:outbox JOBevil 1"
    f" emq:{{outbox.mail}}: JOBparent pwned xq {A}.fanin fp",
    "complete 3 emq:{outbox.mail}:active emq:{outbox.mail}:job:JOBevil emq:{outbox.mail}:flow:outbox JOBevil 1"
    f" emq:{{outbox.mail}}: JOBparent pwned xq '\\u0073{A[1:]}.fanin' fp",
]
# What the visitor may do: a job of its own, completed cross-queue to its own queue.
OWN_COMPLETION = [
    "HSET emq:{outbox.mail}:job:JOBown state pending attempts 0 parent JOBparent parent_queue outbox.orders",
    "ZADD emq:{outbox.mail}:pending 0 JOBown",
    "claim 2 emq:{outbox.mail}:pending emq:{outbox.mail}:active emq:{outbox.mail}: 30000",
    "complete 3 emq:{outbox.mail}:active emq:{outbox.mail}:job:JOBown emq:{outbox.mail}:flow:outbox JOBown 1"
    " emq:{outbox.mail}: JOBparent done xq outbox.orders fp",
]


async def test_the_crafted_outbox_attack_from_a_second_sandbox_leaves_the_first_byte_identical(
    admin: Any, runner: Runner
) -> None:
    await land_fanin(admin, A)
    before = await held_by(admin, A)
    visitor = console(admin, runner, B)
    for text in ATTACK:
        answer = await line(visitor, text)
        assert answer.status in (400, 403) and not answer.wrote, (text, answer)
    for text in OWN_COMPLETION:
        assert (await line(visitor, text)).kind == "reply", text
    for queue in ("outbox.mail", "outbox.orders", "outbox.billing", "fanin"):
        await pump.deliver_flow_completions(admin, f"{B}.{queue}", 10)  # the Pump's ticks on B's queues
    entries = await admin.lrange(keyspace.outbox_key(f"{B}.outbox.mail"), 0, -1)
    assert [json.loads(e)["parent_queue"] for e in entries] == [f"{B}.outbox.orders"]
    assert await held_by(admin, A) == before
    # below the host-side checks, the same moves as B's user answer NOPERM
    theirs = keyspace.outbox_key(f"{A}.fanin")
    plan = Plan("", "direct", ["RPUSH", theirs, CRAFTED], RULES["RPUSH"])
    assert run.printed(plan, await runner.call(B, plan.args, theirs))[0].startswith("(error) NOPERM")
    junk = f"emq:{{{A}.fanin}}:junk"
    moved = await runner.evalsha(B, registry.script_source("outbox_age_head"),
                                 [junk, f"emq:{{{A}.fanin}}:flow:outbox:head", theirs], [CRAFTED, 0])
    assert run.refused_by_acl(moved)
    assert await held_by(admin, A) == before


async def test_noperm_is_shown_in_words_when_a_line_slips_past_the_host_checks(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    before = await held_by(admin, A)
    theirs = keyspace.dependencies_key(f"{A}.fanin", "JOBparent")
    refused = await line(console(admin, runner, B), f"DECR emq:{{{A}.fanin}}:job:JOBparent:dependencies")
    assert refused.status == 403 and "another sandbox" in refused.lines[0]
    slipped = Plan("", "direct", ["DECR", theirs], RULES["DECR"], queue="fanin", written=[theirs])
    value = await run.execute(runner, admin, B, slipped, Confinement(B, QUEUES))
    assert run.printed(slipped, value) == ["(error) NOPERM No permissions to access a key", run.NOPERM_WORDS]
    script = Plan("", "script", [], script="claim", keys=[keyspace.queue_key(f"{A}.fanin", "pending"),
                  keyspace.queue_key(f"{A}.fanin", "active")], argv=[keyspace.base(f"{A}.fanin"), "1000"])
    printed = run.printed(script, await run.execute(runner, admin, B, script, Confinement(B, QUEUES)))
    assert printed[0].startswith("(error) NOPERM") and printed[-1] == run.NOPERM_WORDS
    assert await held_by(admin, A) == before


async def test_a_script_by_name_whose_keys_name_another_sandbox_is_refused_in_words(
    admin: Any, runner: Runner
) -> None:
    await land_fanin(admin, A)
    before = await held_by(admin, A)
    answer = await line(console(admin, runner, B),
                        f"claim 2 emq:{{{A}.fanin}}:pending emq:{{{A}.fanin}}:active emq:{{{A}.fanin}}: 1000")
    assert answer.status == 403 and answer.refused is not None and "another sandbox" in answer.refused.message
    assert await held_by(admin, A) == before


async def claimed_native_job(admin: Any, sandbox: str) -> tuple[str, str]:
    row, active = keyspace.job_key(f"{sandbox}.native", "JOBx"), keyspace.queue_key(f"{sandbox}.native", "active")
    await admin.hset(row, mapping={"state": "active", "attempts": "1", "payload": "x"})
    await admin.zadd(active, {"JOBx": 1})
    return row, active


async def test_emq_complete_with_a_foreign_or_ill_formed_base_creates_no_key(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    mine_row, mine_active = await claimed_native_job(admin, B)
    theirs_row, theirs_active = await claimed_native_job(admin, A)
    everything = {k: await admin.dump(k) for k in await names(admin, "*")}
    visitor = console(admin, runner, B)
    for base in (f"LLL{{{B}.native}}:", f"emq:{{{A}.native}}:", "emq:{native}:metrics:"):
        answer = await line(visitor, f"EMQ.COMPLETE 2 emq:{{native}}:active emq:{{native}}:job:JOBx JOBx 1 {base}")
        assert answer.status == 403 and not answer.wrote, (base, answer)
    # the same lines below the host-side checks: the module refuses the base, Valkey the keys
    for base in (f"LLL{{{B}.native}}:", f"emq:{{{A}.native}}:", f"emq:{{{B}.native}}:x:"):
        said = await runner.call(B, ["EMQ.COMPLETE", 2, mine_active, mine_row, "JOBx", 1, base], mine_active)
        assert "the base must be emq:{<hashtag>}:" in str(said), base
    said = await runner.call(B, ["EMQ.COMPLETE", 2, theirs_active, theirs_row, "JOBx", 1,
                                 keyspace.base(f"{A}.native")], theirs_active)
    assert run.refused_by_acl(said)
    assert {k: await admin.dump(k) for k in await names(admin, "*")} == everything
    done = await line(visitor, "EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:JOBx JOBx 1 emq:{native}:")
    assert done.lines == ("(integer) 1",) and done.touched == ("native",)


async def test_unicode_digits_and_nan_are_refused_before_anything_runs(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, B)
    before = await held_by(admin, B)
    visitor = console(admin, runner, B)
    for text in ["claim ² emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000",
                 "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: nan",
                 "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: inf",
                 "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 3e4",
                 "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: ٣٠٠٠٠",
                 "fail 4 emq:{fanin}:active emq:{fanin}:job:JOBchild1 emq:{fanin}:schedule emq:{fanin}:dead"
                 " JOBchild1 1 boom nan 100 emq:{fanin}:",
                 "EMQ.FAIL ⁴ emq:{fanin}:active"]:
        answer = await line(visitor, text)
        assert answer.status == 400 and answer.refused is not None and answer.refused.reason == "bad-line", text
        assert answer.lines[0].startswith("(refused) ") and not answer.wrote
    assert await held_by(admin, B) == before


async def test_the_console_is_closed_where_the_site_may_not_make_users(admin: Any, valkey: Any) -> None:
    await admin.execute_command("ACL", "SETUSER", "site-no-acl", "reset", "on", ">pw", "~*", "&*", "+@all", "-acl")
    limited = aioredis.Redis.from_url(valkey.url, username="site-no-acl", password="pw", decode_responses=True)
    closed = Runner(limited, SECRET)
    try:
        assert "may not create Valkey ACL users" in (await closed.probe() or "")
        answer = await line(console(limited, closed, B), "PING")
        assert answer.status == 503 and answer.refused is not None and answer.refused.reason == "closed"
        assert answer.refused.message.startswith("The console is closed here: the site may not create Valkey ACL")
    finally:
        await closed.aclose()
        await limited.aclose()
        await admin.execute_command("ACL", "DELUSER", "site-no-acl")
    assert await acl.Runner(admin, SECRET).probe() is None


async def test_a_read_only_console_reads_and_refuses_every_write_in_the_callers_words(
    admin: Any, runner: Runner
) -> None:
    await land_fanin(admin, B)
    before = await held_by(admin, B)
    watching = console(admin, runner, B, read_only="In demo mode the console only reads.")
    assert (await line(watching, "GET emq:{fanin}:job:JOBparent:dependencies")).lines == ('"3"',)
    for text in ("SET emq:{fanin}:note x", "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 1"):
        answer = await line(watching, text)
        assert answer.status == 403 and answer.body()["error"] == "In demo mode the console only reads."
    assert await held_by(admin, B) == before


async def test_a_write_names_the_queue_it_touched_and_a_read_touches_none(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, B)
    visitor = console(admin, runner, B)
    read = await line(visitor, "ZCARD emq:{fanin}:pending")
    assert (read.wrote, read.touched, read.status, read.body()) == (
        False, (), 200, {"command": "ZCARD emq:{fanin}:pending", "reply_lines": ["(integer) 3"], "kind": "reply"})
    wrote = await line(visitor, "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000")
    assert (wrote.wrote, wrote.touched, wrote.lines) == (True, ("fanin",), ('1) "JOBchild1"', "2) (integer) 1"))
    error = await line(visitor, "LLEN emq:{fanin}:pending")
    assert error.kind == "error" and error.status == 200


async def test_keys_and_scan_run_as_the_site_on_the_own_sandbox_only(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    await land_fanin(admin, B)
    visitor = console(admin, runner, B)
    listed = (await line(visitor, "KEYS *")).lines
    assert '1) "emq:{fanin}:job:JOBchild1"' in listed and not any(A in x or B in x for x in listed)
    assert (await line(visitor, "SCAN 0 MATCH emq:{fanin}:pend*")).lines == ('1) "0"', '2) 1) "emq:{fanin}:pending"')
    assert (await line(visitor, f"KEYS emq:{{{A}.*")).status == 403


async def test_a_write_while_valkey_is_out_of_memory_answers_503_and_writes_nothing(
    admin: Any, runner: Runner
) -> None:
    await land_fanin(admin, B)
    visitor = console(admin, runner, B)
    assert (await line(visitor, "PING")).status == 200  # the users exist before memory runs out
    before = await held_by(admin, B)
    await admin.config_set("maxmemory", "1")
    try:
        answer = await line(visitor, "SET emq:{fanin}:note hello")
        read = await line(visitor, "GET emq:{fanin}:job:JOBparent:dependencies")
    finally:
        await admin.config_set("maxmemory", "0")
    assert answer.status == 503 and answer.refused is not None and "memory limit" in answer.refused.message
    assert read.lines == ('"3"',)
    assert await held_by(admin, B) == before
