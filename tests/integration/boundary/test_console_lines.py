"""Every allowlisted command, run through `run_line` as the sandbox's ACL user:
reads answer as valkey-cli prints them and write nothing, writes change the
sandbox's keys and nothing outside it, and every refusal names its reason
with the whole keyspace unchanged (DUMP of every key). Ported from the
console's HTTP tests to the API the web layer calls."""

from __future__ import annotations

from typing import Any

import pytest

from server.console.as_user import Runner
from server.console.plan import script_shas
from tests.console_lines import claim, complete_child

from .support import A, B, console, land_fanin, line, names

READS = [
    ("GET emq:{fanin}:job:JOBparent:dependencies", ['"3"']),
    ("STRLEN emq:{fanin}:job:JOBparent:dependencies", ["(integer) 1"]),
    ("HGET emq:{fanin}:job:JOBparent state", ['"awaiting_children"']),
    # ten items: valkey-cli right-aligns the indices to the widest
    ("HGETALL emq:{fanin}:job:JOBchild1", [' 1) "state"', ' 2) "pending"', ' 3) "attempts"', ' 4) "0"',
                                           ' 5) "payload"', ' 6) "part 1"', ' 7) "parent"', ' 8) "JOBparent"',
                                           ' 9) "parent_policy"', '10) "fp"']),
    ("HMGET emq:{fanin}:job:JOBparent state nothing", ['1) "awaiting_children"', "2) (nil)"]),
    ("HLEN emq:{fanin}:job:JOBparent", ["(integer) 3"]),
    ("HEXISTS emq:{fanin}:job:JOBparent parent", ["(integer) 0"]),
    ("HKEYS emq:{fanin}:job:JOBparent", ['1) "state"', '2) "attempts"', '3) "payload"']),
    ("HVALS emq:{fanin}:job:JOBparent", ['1) "awaiting_children"', '2) "0"', '3) "build the report"']),
    ("ZRANGE emq:{fanin}:pending 0 -1 WITHSCORES", ['1) "JOBchild1"', '2) "0"', '3) "JOBchild2"', '4) "0"',
                                                    '5) "JOBchild3"', '6) "0"']),
    ("ZREVRANGE emq:{fanin}:pending 0 0", ['1) "JOBchild3"']),
    ("ZRANGEBYSCORE emq:{fanin}:pending -inf +inf LIMIT 0 1", ['1) "JOBchild1"']),
    ("ZSCORE emq:{fanin}:pending JOBchild2", ['"0"']),
    ("ZMSCORE emq:{fanin}:pending JOBchild1 JOBparent", ['1) "0"', "2) (nil)"]),
    ("ZCARD emq:{fanin}:pending", ["(integer) 3"]),
    ("ZRANK emq:{fanin}:pending JOBchild2", ["(integer) 1"]),
    ("ZREVRANK emq:{fanin}:pending JOBchild1", ["(integer) 2"]),
    ("ZCOUNT emq:{fanin}:pending 0 0", ["(integer) 3"]),
    ("LRANGE emq:{fanin}:flow:outbox 0 -1", ["(empty array)"]),
    ("LLEN emq:{fanin}:flow:outbox", ["(integer) 0"]),
    ("LINDEX emq:{fanin}:flow:outbox 0", ["(nil)"]),
    ("TYPE emq:{fanin}:pending", ["zset"]),
    ("type 'emq:{fanin}:job:JOBparent'", ["hash"]),
    ("EXISTS emq:{fanin}:job:JOBparent emq:{fanin}:active emq:{fanin}:pending", ["(integer) 2"]),
    ("TTL emq:{fanin}:job:JOBparent", ["(integer) -1"]),
    ("PTTL emq:{fanin}:nothing", ["(integer) -2"]),
    ("PING", ["PONG"]),
    ('PING "hi there"', ['"hi there"']),
    ("KEYS emq:{fanin}:job:JOBparent*", ['1) "emq:{fanin}:job:JOBparent"',
                                         '2) "emq:{fanin}:job:JOBparent:dependencies"']),
    ("SCAN 0 MATCH emq:{fanin}:pend* COUNT 10", ['1) "0"', '2) 1) "emq:{fanin}:pending"']),
    ("SCAN 0 MATCH emq:{fanin}:* TYPE zset", ['1) "0"', '2) 1) "emq:{fanin}:pending"']),
    (f"GET emq:{{{B}.fanin}}:job:JOBparent:dependencies", ['"3"']),  # the full form of the own sandbox
]

WRITES = [
    ("SET emq:{fanin}:note hello", ["OK"], "emq:{fanin}:note", "hello"),
    ("SET emq:{fanin}:note bye GET", ['"hello"'], "emq:{fanin}:note", "bye"),
    ("INCR emq:{fanin}:count", ["(integer) 1"], "emq:{fanin}:count", "1"),
    ("INCRBY emq:{fanin}:count 5", ["(integer) 6"], "emq:{fanin}:count", "6"),
    ("DECRBY emq:{fanin}:count 2", ["(integer) 4"], "emq:{fanin}:count", "4"),
    ("DECR emq:{fanin}:job:JOBparent:dependencies", ["(integer) 2"], "emq:{fanin}:job:JOBparent:dependencies", "2"),
    ("SET emq:{fanin}:job:JOBparent:dependencies 3", ["OK"], "emq:{fanin}:job:JOBparent:dependencies", "3"),
    ("HSET emq:{fanin}:job:JOBextra state pending attempts 0", ["(integer) 2"], None, None),
    ("HSETNX emq:{fanin}:job:JOBextra state active", ["(integer) 0"], None, None),
    ("HINCRBY emq:{fanin}:job:JOBextra attempts 2", ["(integer) 2"], None, None),
    ("HDEL emq:{fanin}:job:JOBextra state", ["(integer) 1"], None, None),
    ("ZADD emq:{fanin}:schedule 5 JOBextra", ["(integer) 1"], None, None),
    ("ZINCRBY emq:{fanin}:schedule 1.5 JOBextra", ['"6.5"'], None, None),
    ("ZPOPMIN emq:{fanin}:schedule", ['1) "JOBextra"', '2) "6.5"'], None, None),
    ("ZADD emq:{fanin}:schedule 1 JOBextra", ["(integer) 1"], None, None),
    ("ZREM emq:{fanin}:schedule JOBextra", ["(integer) 1"], None, None),
    ("RPUSH emq:{fanin}:job:JOBextra:logs a b", ["(integer) 2"], None, None),
    ("LPUSH emq:{fanin}:job:JOBextra:logs c", ["(integer) 3"], None, None),
    ("LPOP emq:{fanin}:job:JOBextra:logs", ['"c"'], None, None),
    ("RPOP emq:{fanin}:job:JOBextra:logs", ['"b"'], None, None),
    ("LREM emq:{fanin}:job:JOBextra:logs 0 a", ["(integer) 1"], None, None),
    ("EXPIRE emq:{fanin}:note 100", ["(integer) 1"], None, None),
    ("PEXPIRE emq:{fanin}:note 100000", ["(integer) 1"], None, None),
    ("PERSIST emq:{fanin}:note", ["(integer) 1"], None, None),
    ("DEL emq:{fanin}:note emq:{fanin}:count emq:{fanin}:job:JOBextra", ["(integer) 3"], "emq:{fanin}:note", None),
]

REFUSED = [
    ("FLUSHALL", 403, "FLUSHALL is refused"), ("flushdb", 403, "FLUSHDB is refused"),
    ("CONFIG GET *", 403, "CONFIG is refused"), ('EVAL "return 1" 0', 403, "EVAL is refused"),
    ("FUNCTION LIST", 403, "runs Lua of your own"), ("SCRIPT FLUSH", 403, "runs Lua of your own"),
    ("MODULE LIST", 403, "MODULE is refused"), ("DEBUG SLEEP 1", 403, "DEBUG is refused"),
    ("SHUTDOWN NOSAVE", 403, "stop the server"), ("CLIENT LIST", 403, "CLIENT is refused"),
    ("MONITOR", 403, "hold the console's connection"), ("SUBSCRIBE x", 403, "hold the console's connection"),
    ("ACL LIST", 403, "ACL is refused"), ("AUTH sbx-x y", 403, "AUTH is refused"),
    ("RANDOMKEY", 403, "not a command the console runs"),
    ("GETDEL emq:{fanin}:job:JOBparent:dependencies", 403, "not a command the console runs"),
    ("KEYS lab:*", 403, "a pattern starts with emq:{"), ("GET lab:secret", 403, "outside every sandbox"),
    ("DEL lab:sandboxes", 403, "outside every sandbox"), ("SET plainkey 1", 403, "outside every sandbox"),
    ("SET emq:{mine}:x 1", 403, "only the course's queues"),
    ("RPUSH emq:{outbox.orders}:flow:outbox junk", 403, "the outbox is written by complete and fail"),
    ("SET emq:{fanin}:job:JOBparent x", 403, "is a hash in the key grammar"),
    ("SET emq:{fanin}:job:JOBparent:dependencies lots", 400, "a counter"),
    ("HSET emq:{fanin}:job:JOBchild1 parent_queue elsewhere", 403, "not one of the course's queues"),
    ("EVALSHA " + "a" * 40 + " 1 emq:{fanin}:pending", 403, "course's scripts only"),
    ("claim 2 emq:{fanin}:pending emq:{outbox.mail}:active emq:{fanin}: 1", 403, "shares one"),
    ("claim 2 emq:{fanin}:pending emq:{fanin}:active nobase 1", 403, "outside every sandbox"),
    ("claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}:job: 1", 403, "the queue's base"),
    ("flow_deliver 1 emq:{fanin}:x", 403, "the Pump's own script"),
    ("DEL emq:{fanin}:a emq:{native}:b", 400, "a write names keys of one queue"),
    ("SCAN 17", 400, "start it at cursor 0"), ('GET "emq:{fanin}:job:JOBparent', 400, "unbalanced quotes"),
    ('GET "emq:{fanin}:pending"x', 400, "must be followed by a space"),
    ("SET emq:{fanin}:note " + "x" * 1025, 400, "at most 1024 bytes"),
    ("HMGET emq:{fanin}:job:JOBparent " + "f " * 80, 400, "more than 64 arguments"),
    ("GET", 400, "GET takes 1 arguments"), ("", 400, "type a command"),
    (f"GET emq:{{{A}.fanin}}:job:JOBparent:dependencies", 403, "another sandbox"),
    (f"KEYS emq:{{{A}.*", 403, "another sandbox"),
    (f"SET emq:{{fanin}}:note {A}.fanin", 403, "another sandbox"),
    (f"claim 2 emq:{{fanin}}:pending emq:{{fanin}}:active emq:{{{A}.fanin}}: 1", 403, "another sandbox"),
]


async def everything(admin: Any) -> dict[str, Any]:
    return {k: await admin.dump(k) for k in await names(admin, "*")}


@pytest.fixture
async def landed(admin: Any) -> Any:
    await land_fanin(admin, A)
    await land_fanin(admin, B)
    return admin


async def test_every_allowlisted_read_answers_as_valkey_cli_prints_it_and_writes_nothing(
    landed: Any, runner: Runner
) -> None:
    visitor = console(landed, runner, B)
    before = await everything(landed)
    for text, printed in READS:
        answer = await line(visitor, text)
        assert list(answer.lines) == printed and not answer.wrote, text
    assert await everything(landed) == before


async def test_every_allowlisted_write_changes_the_sandboxs_key_and_nothing_outside(
    landed: Any, runner: Runner
) -> None:
    visitor = console(landed, runner, B)
    outside = {k: v for k, v in (await everything(landed)).items() if B not in k}
    for text, printed, key, value in WRITES:
        answer = await line(visitor, text)
        assert list(answer.lines) == printed and answer.touched == ("fanin",), text
        if key is not None:
            assert await landed.get(key.replace("emq:{", "emq:{" + B + ".")) == value, text
    assert {k: v for k, v in (await everything(landed)).items() if B not in k} == outside


async def test_the_course_scripts_run_by_name_or_sha_and_errors_print_as_valkey_cli_does(
    landed: Any, runner: Runner
) -> None:
    visitor = console(landed, runner, B)
    assert (await line(visitor, claim("fanin"))).lines == ('1) "JOBchild1"', "2) (integer) 1")
    stale = await line(visitor, complete_child("fanin", "JOBchild1", 7, "JOBparent", "x"))
    assert stale.lines == ("(error) EMQSTALE complete token mismatch",) and stale.kind == "error"
    assert (await line(visitor, complete_child("fanin", "JOBchild1", 1, "JOBparent", "done"))).lines == (
        "(integer) 1",)
    assert (await line(visitor, "HGET emq:{fanin}:job:JOBparent:processed JOBchild1")).lines == ('"done"',)
    sha = next(s for s, n in script_shas().items() if n == "claim")
    by_sha = f"EVALSHA {sha} 2 emq:{{fanin}}:pending emq:{{fanin}}:active emq:{{fanin}}: 30000"
    assert (await line(visitor, by_sha)).lines == ('1) "JOBchild2"', "2) (integer) 1")
    native = complete_child("fanin", "JOBchild2", 1, "JOBparent", "x").replace("complete 5", "EMQ.COMPLETE 5", 1)
    assert (await line(visitor, native)).lines == ("(error) EMQSTATE complete flow not native",)
    assert (await line(visitor, "HINCRBY emq:{fanin}:job:JOBparent payload 1")).lines == (
        "(error) ERR hash value is not an integer",)


async def test_every_refusal_names_its_reason_and_leaves_the_whole_keyspace_as_it_was(
    landed: Any, runner: Runner
) -> None:
    visitor = console(landed, runner, B)
    before = await everything(landed)
    for text, status, words in REFUSED:
        answer = await line(visitor, text)
        assert answer.status == status and answer.refused is not None, (text, answer)
        assert words in answer.refused.message, (text, answer.refused.message)
        assert answer.body() == {"command": text, "reply_lines": [f"(refused) {answer.refused.message}"],
                                 "kind": "refused", "error": answer.refused.message}
    assert await everything(landed) == before


async def test_long_replies_are_cut_with_a_visible_note(landed: Any, runner: Runner) -> None:
    visitor = console(landed, runner, B)
    for _ in range(5):
        await line(visitor, "RPUSH emq:{fanin}:job:JOBlong:logs " + " ".join(f"line{i}" for i in range(52)))
    printed = (await line(visitor, "LRANGE emq:{fanin}:job:JOBlong:logs 0 -1")).lines
    assert len(printed) == 201 and printed[-1].startswith("(… 60 more lines not shown")
