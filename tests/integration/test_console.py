"""The console against the real site: every allowlisted command on the
sandbox's keys answers as valkey-cli prints it, and every refusal is a 4xx
naming its reason with the whole keyspace unchanged (DUMP of every key)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from server.console.plan import script_shas
from server.sandboxes.admission import UNUSED_KEY
from server.sandboxes.sandbox import REGISTRY_KEY
from server.web.guard import DEMO_REFUSAL
from server.widgets import WIDGETS
from tests.console_lines import claim, complete_child
from tests.support import LiveSite, running, sandbox_of


@pytest.fixture(scope="module")
def world(site: LiveSite) -> dict[str, Any]:
    caller, other = site.visitor(), site.visitor()
    for client in (caller, other):
        for name in WIDGETS:
            assert client.get(f"/api/widgets/{name}/state").status_code == 200
    return {"caller": caller, "sandbox": sandbox_of(caller), "other": sandbox_of(other)}


@pytest.fixture
def raw(site: LiveSite) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(site.valkey_url)
    yield client
    client.close()


@pytest.fixture
def fresh(world: dict[str, Any]) -> httpx.Client:
    """The caller with the fan-in landed afresh: parent held on three children."""
    caller: httpx.Client = world["caller"]
    assert caller.post("/api/widgets/fanin/reset").status_code == 200
    return caller


def run(client: httpx.Client, command: str) -> list[str]:
    answer = client.post("/api/console", json={"command": command})
    assert answer.status_code == 200, (command, answer.text)
    body = answer.json()
    assert body["command"] == command
    return list(body["reply_lines"])


def dump_all(r: redis.Redis) -> dict[bytes, Any]:
    return {key: r.dump(key) for key in r.scan_iter(b"*", count=1000)}


def real(world: dict[str, Any], key: str) -> str:
    return key.replace("emq:{", "emq:{" + world["sandbox"] + ".", 1)


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
]


@pytest.mark.parametrize(("command", "printed"), READS, ids=[c for c, _ in READS])
def test_every_allowlisted_read_answers_as_valkey_cli_prints_it_and_writes_no_emq_key(
    fresh: httpx.Client, raw: redis.Redis, command: str, printed: list[str]
) -> None:
    before = {k: v for k, v in dump_all(raw).items() if k.startswith(b"emq:")}
    assert run(fresh, command) == printed
    assert {k: v for k, v in dump_all(raw).items() if k.startswith(b"emq:")} == before


def test_the_full_form_of_the_own_sandbox_reads_the_same_key(fresh: httpx.Client, world: dict[str, Any]) -> None:
    assert run(fresh, f"GET emq:{{{world['sandbox']}.fanin}}:job:JOBparent:dependencies") == ['"3"']


def test_keys_star_lists_the_sandbox_only_in_the_short_form(fresh: httpx.Client, world: dict[str, Any]) -> None:
    listed = run(fresh, "KEYS *")
    assert any(line.endswith('"emq:{fanin}:pending"') for line in listed)
    assert any('"emq:{outbox.orders}:' in line for line in listed)
    assert not any(world["sandbox"] in line or world["other"] in line for line in listed)


WRITES = [
    ("SET emq:{fanin}:note hello", ["OK"], "emq:{fanin}:note", b"hello"),
    ("SET emq:{fanin}:note bye GET", ['"hello"'], "emq:{fanin}:note", b"bye"),
    ("INCR emq:{fanin}:count", ["(integer) 1"], "emq:{fanin}:count", b"1"),
    ("INCRBY emq:{fanin}:count 5", ["(integer) 6"], "emq:{fanin}:count", b"6"),
    ("DECRBY emq:{fanin}:count 2", ["(integer) 4"], "emq:{fanin}:count", b"4"),
    ("DECR emq:{fanin}:job:JOBparent:dependencies", ["(integer) 2"], "emq:{fanin}:job:JOBparent:dependencies", b"2"),
    ("SET emq:{fanin}:job:JOBparent:dependencies 3", ["OK"], "emq:{fanin}:job:JOBparent:dependencies", b"3"),
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


def test_every_allowlisted_write_changes_the_sandbox_key_and_nothing_outside(
    fresh: httpx.Client, raw: redis.Redis, world: dict[str, Any]
) -> None:
    mine = (("emq:{" + world["sandbox"] + ".").encode(), ("lab:{" + world["sandbox"]).encode(),
            REGISTRY_KEY.encode(), UNUSED_KEY.encode())
    outside = {k: v for k, v in dump_all(raw).items() if not k.startswith(mine)}
    for command, printed, key, value in WRITES:
        assert run(fresh, command) == printed, command
        if key is not None:
            assert raw.get(real(world, key)) == value, command
    assert {k: v for k, v in dump_all(raw).items() if not k.startswith(mine)} == outside


def test_a_console_write_shows_in_the_widget_snapshot(fresh: httpx.Client) -> None:
    run(fresh, "HSET emq:{fanin}:job:JOBmine state pending")
    snap = fresh.get("/api/widgets/fanin/state").json()["snapshot"]
    names = [k["name"] for q in snap["queues"] for k in q["keys"]]
    assert any(n.endswith(":job:JOBmine") for n in names)


def test_the_course_scripts_run_by_name_and_the_fan_in_counts_down(fresh: httpx.Client) -> None:
    assert run(fresh, claim("fanin")) == ['1) "JOBchild1"', "2) (integer) 1"]
    assert run(fresh, complete_child("fanin", "JOBchild1", 1, "JOBparent", "done")) == ["(integer) 1"]
    assert run(fresh, "GET emq:{fanin}:job:JOBparent:dependencies") == ['"2"']
    assert run(fresh, "HGET emq:{fanin}:job:JOBparent:processed JOBchild1") == ['"done"']
    snap = fresh.get("/api/widgets/fanin/state").json()["snapshot"]
    assert snap["picture"]["parent"]["dependencies"] == 2


def test_a_stale_token_answers_the_scripts_own_error(fresh: httpx.Client) -> None:
    run(fresh, claim("fanin"))
    assert run(fresh, complete_child("fanin", "JOBchild1", 7, "JOBparent", "x")) == [
        "(error) EMQSTALE complete token mismatch"
    ]
    assert run(fresh, "GET emq:{fanin}:job:JOBparent:dependencies") == ['"3"']


def test_evalsha_of_a_course_script_runs_that_script(fresh: httpx.Client) -> None:
    sha = next(s for s, n in script_shas().items() if n == "claim")
    line = f"EVALSHA {sha} 2 emq:{{fanin}}:pending emq:{{fanin}}:active emq:{{fanin}}: 30000"
    assert run(fresh, line) == ['1) "JOBchild1"', "2) (integer) 1"]


def test_native_emq_complete_is_sent_and_the_module_refuses_the_flow_layout(
    fresh: httpx.Client, raw: redis.Redis
) -> None:
    line = complete_child("fanin", "JOBchild1", 1, "JOBparent", "done").replace("complete 5", "EMQ.COMPLETE 5", 1)
    loaded = any(m.get(b"name") == b"emq" for m in raw.execute_command("MODULE", "LIST"))
    before = {k: v for k, v in dump_all(raw).items() if k.startswith(b"emq:")}
    printed = run(fresh, line)
    if loaded:
        assert printed == ["(error) EMQSTATE complete flow not native"]
    else:  # a Valkey without the module: its own unknown-command error, shown as it is
        assert printed[0].startswith("(error) ERR unknown command 'EMQ.COMPLETE'")
    assert {k: v for k, v in dump_all(raw).items() if k.startswith(b"emq:")} == before


def test_valkey_errors_are_shown_as_valkey_cli_prints_them(fresh: httpx.Client) -> None:
    assert run(fresh, "LLEN emq:{fanin}:pending") == [
        "(error) WRONGTYPE Operation against a key holding the wrong kind of value"
    ]
    answer = fresh.post("/api/console", json={"command": "HINCRBY emq:{fanin}:job:JOBparent payload 1"})
    assert answer.json() == {"command": "HINCRBY emq:{fanin}:job:JOBparent payload 1",
                             "reply_lines": ["(error) ERR hash value is not an integer"], "kind": "error"}


REFUSED = [
    ("FLUSHALL", 403, "FLUSHALL is refused"),
    ("flushdb", 403, "FLUSHDB is refused"),
    ("CONFIG GET *", 403, "CONFIG is refused"),
    ('EVAL "return 1" 0', 403, "EVAL is refused"),
    ("EVAL_RO \"return redis.call('FLUSHALL')\" 0", 403, "EVAL_RO is refused"),
    ("FUNCTION LIST", 403, "runs Lua of your own"),
    ("SCRIPT FLUSH", 403, "runs Lua of your own"),
    ("MODULE LIST", 403, "MODULE is refused"),
    ("DEBUG SLEEP 1", 403, "DEBUG is refused"),
    ("SHUTDOWN NOSAVE", 403, "stop the server"),
    ("CLIENT LIST", 403, "CLIENT is refused"),
    ("MONITOR", 403, "hold the console's connection"),
    ("SUBSCRIBE x", 403, "hold the console's connection"),
    ("PSUBSCRIBE *", 403, "hold the console's connection"),
    ("SAVE", 403, "SAVE is refused"),
    ("BGSAVE", 403, "BGSAVE is refused"),
    ("REPLICAOF 127.0.0.1 1", 403, "REPLICAOF is refused"),
    ("ACL LIST", 403, "ACL is refused"),
    ("GETDEL emq:{fanin}:job:JOBparent:dependencies", 403, "not a command the console runs"),
    ("KEYS lab:*", 403, "a pattern starts with emq:{"),
    ("GET lab:secret", 403, "outside every sandbox"),
    ("DEL lab:sandboxes", 403, "outside every sandbox"),
    ("SET plainkey 1", 403, "outside every sandbox"),
    ("SET emq:{mine}:x 1", 403, "only the course's queues"),
    ("RPUSH emq:{outbox.orders}:flow:outbox junk", 403, "the outbox is written by complete and fail"),
    ("SET emq:{fanin}:job:JOBparent x", 403, "is a hash in the key grammar"),
    ("SET emq:{fanin}:job:JOBparent:dependencies lots", 400, "a counter"),
    ("HSET emq:{fanin}:job:JOBchild1 parent_queue elsewhere", 403, "not one of the course's queues"),
    ("EVALSHA " + "a" * 40 + " 1 emq:{fanin}:pending", 403, "course's scripts only"),
    ("claim 2 emq:{fanin}:pending emq:{results}:active emq:{fanin}: 1", 403, "shares one"),
    ("claim 2 emq:{fanin}:pending emq:{fanin}:active nobase 1", 403, "outside every sandbox"),
    ("SCAN 17", 400, "start it at cursor 0"),
    ('GET "emq:{fanin}:job:JOBparent', 400, "unbalanced quotes"),
    ("GET 'emq:{fanin}:pending", 400, "unbalanced quotes"),
    ('GET "emq:{fanin}:pending"x', 400, "must be followed by a space"),
    ("SET emq:{fanin}:note " + "x" * 1025, 400, "at most 1024 bytes"),
    ("HMGET emq:{fanin}:job:JOBparent " + "f " * 80, 400, "more than 64 arguments"),
    ("GET " + "k" * 5000, 400, "at most 4096"),
    ("GET", 400, "GET takes 1 arguments"),
    ("", 400, "type a command"),
]


def other_sandbox_cases(world: dict[str, Any]) -> list[tuple[str, int, str]]:
    other = world["other"]
    return [
        (f"GET emq:{{{other}.fanin}}:job:JOBparent:dependencies", 403, "another sandbox"),
        (f"DEL emq:{{{other}.fanin}}:pending", 403, "another sandbox"),
        (f"KEYS emq:{{{other}.*", 403, "another sandbox"),
        (f"HSET emq:{{fanin}}:job:JOBchild1 parent_queue {other}.fanin", 403, "another sandbox"),
        (f"SET emq:{{fanin}}:note {other}.fanin", 403, "another sandbox"),
        (f"claim 2 emq:{{fanin}}:pending emq:{{fanin}}:active emq:{{{other}.fanin}}: 1", 403, "another sandbox"),
    ]


def test_every_refusal_names_its_reason_and_leaves_the_whole_keyspace_as_it_was(
    world: dict[str, Any], raw: redis.Redis
) -> None:
    caller: httpx.Client = world["caller"]
    caller.post("/api/widgets/fanin/reset")
    before = dump_all(raw)
    for command, status, words in [*REFUSED, *other_sandbox_cases(world)]:
        answer = caller.post("/api/console", json={"command": command})
        assert answer.status_code == status, (command, answer.status_code, answer.text)
        body = answer.json()
        assert words in body["error"], (command, body["error"])
        assert body["kind"] == "refused" and body["reply_lines"] == [f"(refused) {body['error']}"]
    assert dump_all(raw) == before


def test_bodies_that_are_not_a_command_are_refused(world: dict[str, Any], raw: redis.Redis) -> None:
    caller: httpx.Client = world["caller"]
    before = dump_all(raw)
    for payload in [{}, {"command": 5}, {"command": ["GET", "x"]}, {"command": "PING", "extra": 1}]:
        assert caller.post("/api/console", json=payload).status_code == 400
    assert caller.post("/api/console", content=b"{", headers={"content-type": "application/json"}).status_code == 400
    assert dump_all(raw) == before


def test_a_foreign_origin_or_no_sandbox_is_refused(site: LiveSite, world: dict[str, Any], raw: redis.Redis) -> None:
    before = dump_all(raw)
    answer = world["caller"].post("/api/console", json={"command": "PING"}, headers={"origin": "https://evil.example"})
    assert answer.status_code == 403 and "cross-site" in answer.json()["error"]
    with site.client() as stranger:
        assert stranger.post("/api/console", json={"command": "PING"}).status_code == 403
        assert stranger.get("/api/console").status_code == 403
    assert dump_all(raw) == before


def test_the_transcript_is_kept_in_valkey_for_a_reload(fresh: httpx.Client) -> None:
    run(fresh, "GET emq:{fanin}:job:JOBparent:dependencies")
    kept = fresh.get("/api/console").json()["transcript"]
    assert kept[-1] == {"command": "GET emq:{fanin}:job:JOBparent:dependencies", "reply_lines": ['"3"'],
                        "kind": "reply"}
    for i in range(25):
        run(fresh, f"PING p{i}")
    kept = fresh.get("/api/console").json()["transcript"]
    assert len(kept) == 20 and kept[-1]["command"] == "PING p24"


def test_long_replies_are_cut_with_a_visible_note(fresh: httpx.Client) -> None:
    for _ in range(5):
        run(fresh, "RPUSH emq:{fanin}:job:JOBlong:logs " + " ".join(f"line{i}" for i in range(52)))
    printed = run(fresh, "LRANGE emq:{fanin}:job:JOBlong:logs 0 -1")
    assert len(printed) == 201 and printed[-1].startswith("(… 60 more lines not shown")
    refused = fresh.post("/api/console", json={"command": "RPUSH emq:{fanin}:job:JOBlong:logs " + "x " * 60})
    assert refused.status_code == 409 and "at most 256" in refused.json()["error"]


def test_the_console_counts_against_the_action_rate(valkey_server: Any) -> None:
    with running(valkey_server.url, env={"EMQLAB_RATE_LIMIT": "3"}) as limited:
        client = limited.visitor()
        codes = [client.post("/api/console", json={"command": "PING"}).status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3] == 429
        assert "too many actions" in client.post("/api/console", json={"command": "PING"}).json()["error"]


def test_on_a_cluster_each_command_runs_on_its_slot_and_crossslot_is_valkeys_own_answer(valkey_cluster: Any) -> None:
    with running(valkey_cluster.url) as clustered:
        client = clustered.visitor()
        for name in ("fanin", "outbox"):
            assert client.get(f"/api/widgets/{name}/state").status_code == 200
        assert run(client, "GET emq:{fanin}:job:JOBparent:dependencies") == ['"3"']
        assert run(client, claim("outbox.mail")) == ['1) "JOBmail1"', "2) (integer) 1"]
        assert run(client, "SCAN 0 MATCH emq:{outbox.*}:pending") == [
            '1) "0"', '2) 1) "emq:{outbox.billing}:pending"', '   2) "emq:{outbox.mail}:pending"'
        ]
        assert run(client, "DEL emq:{fanin}:nope emq:{outbox.mail}:nope") == [
            "(error) CROSSSLOT Keys in request don't hash to the same slot"
        ]


def test_in_demo_mode_a_learner_reads_the_room_but_every_write_is_refused(site: LiveSite, raw: redis.Redis) -> None:
    instructor = site.instructor()
    room = instructor.post("/instructor/rooms", json={"name": "Console demo"}).json()["room"]
    learner = site.visitor()
    assert learner.post("/room/join", data={"code": room["code"], "name": "Ada"}).status_code == 303
    assert instructor.post(f"/instructor/rooms/{room['code']}/demo", json={"demo": True}).status_code == 200
    assert learner.get("/api/widgets/fanin/state").status_code == 200  # the sandbox it watches, landed
    assert run(learner, "GET emq:{fanin}:job:JOBparent:dependencies") == ['"3"']
    before = {k: v for k, v in dump_all(raw).items() if k.startswith(b"emq:")}
    for command in ("SET emq:{fanin}:note x", claim("fanin"), "DEL emq:{fanin}:pending"):
        answer = learner.post("/api/console", json={"command": command})
        assert answer.status_code == 403 and answer.json()["error"] == DEMO_REFUSAL
    assert {k: v for k, v in dump_all(raw).items() if k.startswith(b"emq:")} == before
    instructor.post(f"/instructor/rooms/{room['code']}/demo", json={"demo": False})
