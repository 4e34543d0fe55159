"""The boundary Valkey enforces, below every host-side check: the Runner sends
whatever it is given as the sandbox's own ACL user, and Valkey answers NOPERM
for anything outside that sandbox (a real valkey-server, real ACL users)."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import NoPermissionError, ResponseError

from server.console import as_user as acl
from server.console.as_user import Runner
from server.emq import keyspace, registry
from server.valkey.process import ValkeyProcess

from .support import SECRET, A, B, held_by, land_fanin

A_ROW = keyspace.job_key(f"{A}.fanin", "JOBparent")
A_PENDING = keyspace.queue_key(f"{A}.fanin", "pending")


async def test_a_key_of_another_sandbox_answers_noperm_and_stays_as_it_was(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    before = await held_by(admin, A)
    for args in (["GET", A_ROW], ["HSET", A_ROW, "state", "pwned"], ["DEL", A_ROW, A_PENDING],
                 ["ZADD", A_PENDING, "0", "JOBx"], ["EXISTS", A_ROW]):
        assert isinstance(await runner.call(B, args, args[1]), NoPermissionError), args
    assert await held_by(admin, A) == before


async def test_the_own_sandbox_is_reachable_and_nothing_under_lab(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    assert await runner.call(A, ["HGET", A_ROW, "state"], A_ROW) == b"awaiting_children"
    await admin.set(f"lab:{{{A}.fanin}}:spent", "5")
    assert isinstance(await runner.call(A, ["GET", f"lab:{{{A}.fanin}}:spent"], None), NoPermissionError)
    assert isinstance(await runner.call(A, ["SET", "lab:secret", "x"], None), NoPermissionError)


async def test_a_script_run_as_the_user_cannot_reach_another_sandbox(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    await land_fanin(admin, B)
    before = await held_by(admin, A)
    claim = registry.script_source("claim")
    theirs = [A_PENDING, keyspace.queue_key(f"{A}.fanin", "active")]
    assert isinstance(await runner.evalsha(B, claim, theirs, [keyspace.base(f"{A}.fanin"), 1000]), NoPermissionError)
    # own KEYS, the other sandbox's base: the script stops at the first key it may not touch
    own = [keyspace.queue_key(f"{B}.fanin", "pending"), keyspace.queue_key(f"{B}.fanin", "active")]
    stopped = await runner.evalsha(B, claim, own, [keyspace.base(f"{A}.fanin"), 1000])
    assert isinstance(stopped, ResponseError) and "ACL failure in script" in str(stopped)
    assert await held_by(admin, A) == before


@pytest.mark.parametrize("args", [["KEYS", "*"], ["SCAN", "0"], ["RANDOMKEY"], ["FLUSHALL"], ["FLUSHDB"]],
                         ids=lambda a: a[0])
async def test_commands_key_patterns_cannot_confine_are_denied(admin: Any, runner: Runner, args: list[str]) -> None:
    await land_fanin(admin, A)
    before = await held_by(admin, A)
    assert isinstance(await runner.call(B, args, None), NoPermissionError)
    assert await held_by(admin, A) == before


DENIED_LINES = [["KEYS", "*"], ["SCAN", "0"], ["RANDOMKEY"], ["FLUSHALL"], ["FLUSHDB"], ["CONFIG", "GET", "x"],
                ["SCRIPT", "FLUSH"], ["FUNCTION", "LIST"], ["EVAL", "return 1", "0"], ["DEBUG", "SLEEP", "0"],
                ["ACL", "WHOAMI"], ["MODULE", "LIST"], ["SHUTDOWN"], ["CLIENT", "LIST"], ["OBJECT", "FREQ", "k"],
                ["MIGRATE", "h", "1", "k", "0", "1"], ["MEMORY", "USAGE", "k"], ["INFO"], ["PUBLISH", "c", "m"],
                ["SELECT", "1"], ["MULTI"], ["DUMP", "k"], ["RESTORE", "k", "0", "x"], ["RENAME", "a", "b"]]


async def test_every_denied_command_is_refused_by_the_acl(admin: Any) -> None:
    """ACL DRYRUN asks Valkey without running anything (SHUTDOWN included)."""
    await acl.Runner(admin, SECRET).make(B)
    for args in DENIED_LINES:
        said = await admin.execute_command("ACL", "DRYRUN", acl.user_of(B), *args)
        assert "no permissions" in str(said), (args, said)
    commands = (await admin.execute_command("ACL", "GETUSER", acl.user_of(B)))["commands"].split()
    assert all(f"-{name}" in commands for name in acl.DENIED)
    own = "emq:{" + B + ".q}:k"
    for args in (["GET", own], ["EVALSHA", "0" * 40, "1", own], ["EMQ.COMPLETE", "2", own, own, "J", "1", "b"]):
        assert await admin.execute_command("ACL", "DRYRUN", acl.user_of(B), *args) == "OK", args
    rules = await admin.execute_command("ACL", "GETUSER", acl.user_of(B))
    assert rules["keys"] == "~emq:{" + B + ".*" and rules["channels"] == ""


async def test_lines_that_would_change_the_connection_itself_are_never_sent(runner: Runner) -> None:
    for name in ("AUTH", "select", "HELLO", "RESET", "MULTI", "CLIENT"):
        with pytest.raises(ValueError, match="changes the connection"):
            await runner.call(B, [name, "x"], None)


async def test_the_user_is_made_again_after_acl_deluser_as_after_a_restart(admin: Any, runner: Runner) -> None:
    await land_fanin(admin, A)
    assert await runner.call(A, ["HGET", A_ROW, "state"], A_ROW) == b"awaiting_children"
    await acl.drop_user(runner.admin, A)
    assert acl.user_of(A) not in await admin.execute_command("ACL", "USERS")
    assert await runner.call(A, ["HGET", A_ROW, "state"], A_ROW) == b"awaiting_children"
    assert acl.user_of(A) in await admin.execute_command("ACL", "USERS")
    await admin.execute_command("ACL", "DELUSER", acl.IDLE_USER)  # the idle user too: new connections make it again
    assert await runner.call(A, ["HGET", A_ROW, "state"], A_ROW) == b"awaiting_children"


async def test_a_line_after_a_real_valkey_restart_runs_as_a_user_made_again() -> None:
    server = ValkeyProcess()
    server.start()
    admin = aioredis.Redis.from_url(server.url, decode_responses=True)
    fresh = Runner(admin, SECRET)
    try:
        await land_fanin(admin, A)
        assert await fresh.call(A, ["HGET", A_ROW, "state"], A_ROW) == b"awaiting_children"
        server.stop(remove_dir=False)  # no persistence in a test server: the keys go with the users
        server.start()
        await admin.connection_pool.disconnect()  # the site's own client reconnects (not what is tested)
        await land_fanin(admin, A)
        assert acl.user_of(A) not in await admin.execute_command("ACL", "USERS")
        assert await fresh.call(A, ["HGET", A_ROW, "state"], A_ROW) == b"awaiting_children"
        assert isinstance(await fresh.call(B, ["HGET", A_ROW, "state"], A_ROW), NoPermissionError)
    finally:
        await fresh.aclose()
        await admin.aclose()
        server.stop()


async def test_pooled_connections_rest_as_the_idle_user(admin: Any, runner: Runner) -> None:
    await runner.call(A, ["PING"], None)
    clients = await admin.client_list()
    users = {c["user"] for c in clients if c.get("user", "default") != "default"}
    assert users == {acl.IDLE_USER}


async def test_a_failed_auth_never_runs_the_line_as_the_connections_last_user(admin: Any, valkey: Any) -> None:
    """One pooled connection; sandbox A's user ran on it; then sandbox B's
    AUTH fails (no user B, and the site may not make one): B's line ran as
    the idle user, not as A, and A's key is as it was."""
    users = acl.Runner(admin, SECRET)
    await users.make_idle()
    await users.make(A)
    await admin.execute_command("ACL", "SETUSER", "site-no-acl", "reset", "on", ">pw", "~*", "&*", "+@all", "-acl")
    limited = aioredis.Redis.from_url(valkey.url, username="site-no-acl", password="pw", decode_responses=True)
    one = Runner(limited, SECRET, max_connections=1)
    try:
        assert await one.call(A, ["SET", A_ROW, "mine"], A_ROW) == b"OK"
        with pytest.raises(acl.Closed, match="may not create Valkey ACL users"):
            await one.call(B, ["SET", A_ROW, "pwned"], A_ROW)
        assert await admin.get(A_ROW) == "mine"
    finally:
        await one.aclose()
        await limited.aclose()
        await admin.execute_command("ACL", "DELUSER", "site-no-acl")


async def test_the_password_is_derived_never_stored(admin: Any, runner: Runner) -> None:
    assert acl.password_of(SECRET, acl.user_of(A)) == acl.password_of(SECRET, acl.user_of(A))
    assert acl.password_of(SECRET, acl.user_of(A)) != acl.password_of(SECRET, acl.user_of(B))
    assert acl.password_of(b"another site", acl.user_of(A)) != acl.password_of(SECRET, acl.user_of(A))
    await runner.call(A, ["PING"], None)
    assert all(acl.password_of(SECRET, acl.user_of(A)) not in str(v) for v in await admin.keys("*"))
