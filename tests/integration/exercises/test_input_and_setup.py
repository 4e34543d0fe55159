"""Bad input is refused with the typed errors; a grader is set up to hold a learner's script safely."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from redis.exceptions import NoPermissionError, ResponseError

from server.exercises import (
    MAX_SCRIPT_BYTES,
    DoesNotCompile,
    GraderPool,
    NotUtf8,
    PoolSettings,
    Restarting,
    TooLarge,
    UnknownExercise,
    grade,
)
from server.exercises.grader import COURSE_SCRIPTS
from server.exercises.grader_process import ProcessLimits
from tests.integration.exercises.support import COURSE, sandbox, valkey_children


def address_limit(pid: int) -> list[str]:
    """The soft and hard RLIMIT_AS of a process, as /proc shows them."""
    with open(f"/proc/{pid}/limits", encoding="utf-8") as limits:
        line = next(line for line in limits if line.startswith("Max address space"))
    return line.split()[3:5]


async def test_bytes_that_are_not_utf8_are_refused_with_400(pool: GraderPool) -> None:
    with pytest.raises(NotUtf8) as refused:
        await grade(pool, "fan-in", b"return '\xff\xfe'", run_for=sandbox())
    assert refused.value.status == 400
    assert refused.value.as_json() == {"error": "The script is not UTF-8 text (byte 8 cannot be read)."}


async def test_text_with_a_lone_surrogate_is_not_utf8_either(pool: GraderPool) -> None:
    with pytest.raises(NotUtf8):
        await grade(pool, "fan-in", "return '\ud800'", run_for=sandbox())


async def test_a_script_of_16384_bytes_runs_and_one_byte_more_is_refused_with_413(pool: GraderPool) -> None:
    body = COURSE["fan-in"].encode("utf-8")
    padded = body + b"\n--" + b"x" * (MAX_SCRIPT_BYTES - len(body) - 3)
    assert len(padded) == MAX_SCRIPT_BYTES
    graded = await grade(pool, "fan-in", padded, run_for=sandbox())
    assert graded.passed == graded.total
    with pytest.raises(TooLarge) as refused:
        await grade(pool, "fan-in", padded + b"x", run_for=sandbox())
    assert refused.value.status == 413
    assert "16,385 bytes of UTF-8" in refused.value.message


async def test_the_limit_counts_utf8_bytes_not_characters(pool: GraderPool) -> None:
    euros = "-- " + "€" * 5461  # 16,386 bytes in 5,464 characters
    with pytest.raises(TooLarge):
        await grade(pool, "fan-in", euros, run_for=sandbox())


async def test_a_script_that_does_not_compile_is_refused_with_valkeys_message_and_its_line(pool: GraderPool) -> None:
    broken = "local job_id = ARGV[1]\nlocal base = ARGV[3]\nif job_id then\n  return 1\n"
    with pytest.raises(DoesNotCompile) as refused:
        await grade(pool, "fan-in", broken, run_for=sandbox())
    assert refused.value.status == 422
    assert refused.value.line == 5
    assert refused.value.message.startswith("Error compiling script (new function): user_script:5: 'end' expected")
    assert refused.value.as_json() == {"error": refused.value.message, "line": 5}


async def test_an_empty_script_and_an_unknown_exercise_are_refused(pool: GraderPool) -> None:
    with pytest.raises(DoesNotCompile):
        await grade(pool, "fan-in", "  \n", run_for=sandbox())
    with pytest.raises(UnknownExercise) as unknown:
        await grade(pool, "ledger", COURSE["fan-in"], run_for=sandbox())
    assert unknown.value.status == 404


async def test_a_grader_runs_bounded_with_no_persistence_and_a_password(pool: GraderPool) -> None:
    grader = pool.graders[0]
    assert grader.process is not None and grader.process.pid is not None
    assert address_limit(grader.process.pid) == ["268435456", "268435456"]
    admin = aioredis.Redis.from_url(grader.url, decode_responses=True)
    config = await admin.config_get("*")
    assert config["busy-reply-threshold"] == "100"
    assert config["maxmemory"] == str(32 * 1024 * 1024) and config["maxmemory-policy"] == "noeviction"
    assert config["save"] == "" and config["appendonly"] == "no"
    assert config["bind"] == "127.0.0.1"
    reader, writer = await asyncio.open_connection("127.0.0.1", grader.process.port)
    writer.write(b"PING\r\n")  # a stranger on loopback, with no password
    assert (await reader.readline()).startswith(b"-NOAUTH")
    writer.close()
    await admin.aclose()


async def test_a_run_leaves_no_user_and_no_key_behind(pool: GraderPool) -> None:
    await grade(pool, "deliver", COURSE["deliver"], run_for=sandbox())
    for grader in pool.graders:
        admin = aioredis.Redis.from_url(grader.url, decode_responses=True)
        users = await admin.acl_users()
        keys = [name async for name in admin.scan_iter(match="emq:{r*")]
        await admin.aclose()
        assert users == ["default"]
        assert [key for key in keys if not key.startswith("emq:{rzzzzzzzzzz.")] == []


async def test_the_run_user_reaches_its_own_keys_and_nothing_else(pool: GraderPool) -> None:
    async with pool.turn(sandbox()) as grader, grader.run_user() as (run_id, client):
        own = "emq:{" + run_id + ".1.reports}:pending"
        await client.zadd(own, {"JOBpart1": 0})
        assert await client.zcard(own) == 1
        for command in (("SET", "emq:{other}:x", "1"), ("GET", "emq:{" + run_id + "x.1.q}:k"),
                        ("KEYS", "*"), ("SCAN", "0"), ("RANDOMKEY",), ("DBSIZE",), ("FLUSHALL",),
                        ("FLUSHDB",), ("CONFIG", "GET", "*"), ("SCRIPT", "FLUSH"), ("FUNCTION", "LIST"),
                        ("ACL", "LIST"), ("SELECT", "1"), ("MOVE", own, "1"), ("INFO",), ("MODULE", "LIST"),
                        ("SHUTDOWN", "NOSAVE"), ("CLIENT", "LIST"), ("EVAL", "return 1", "0"),
                        ("PUBLISH", "chan", "x")):
            with pytest.raises(NoPermissionError):
                await client.execute_command(*command)
        with pytest.raises(ResponseError, match="DEBUG command not allowed"):  # off for everyone
            await client.execute_command("DEBUG", "SLEEP", "0")


async def test_learners_scripts_do_not_pile_up_in_valkeys_cache_each_run_starts_with_the_course_alone(
    pool: GraderPool,
) -> None:
    for number in range(4):  # four different scripts, each passing
        graded = await grade(pool, "deliver", f"{COURSE['deliver']}\n-- run {number}", run_for=sandbox())
        assert graded.passed == graded.total
    for grader in pool.graders:
        admin = aioredis.Redis.from_url(grader.url)
        try:
            cached = (await admin.info("memory"))["number_of_cached_scripts"]
        finally:
            await admin.aclose()
        # the course's scripts, the seeding of math.random, and at most the last run's own
        assert len(COURSE_SCRIPTS) + 1 <= cached <= len(COURSE_SCRIPTS) + 2


def test_pool_settings_read_the_environment_and_refuse_a_limit_nobody_chose() -> None:
    settings = PoolSettings.from_env({"EMQLAB_GRADERS": "3", "EMQLAB_GRADER_QUEUE": "9",
                                      "EMQLAB_GRADER_SCRIPT_MS": "400", "EMQLAB_GRADER_ADDRESS_MB": "512"})
    assert (settings.graders, settings.queue_bound) == (3, 9)
    assert settings.limits.script_ms == 400 and settings.limits.kill_ms == 1500
    assert settings.process.address_space_mb == 512 and settings.process.maxmemory_mb == 32
    assert PoolSettings.from_env({}) == PoolSettings()
    with pytest.raises(ValueError, match="EMQLAB_GRADERS must be a whole number, not 'two'"):
        PoolSettings.from_env({"EMQLAB_GRADERS": "two"})
    with pytest.raises(ValueError, match="shorter than the SIGKILL deadline"):
        PoolSettings.from_env({"EMQLAB_GRADER_SCRIPT_MS": "1500"})


async def test_a_pool_whose_graders_cannot_start_answers_restarting_not_an_error() -> None:
    before = valkey_children()
    pool = GraderPool(PoolSettings(graders=1, process=ProcessLimits(address_space_mb=1)))
    with pytest.raises(Restarting) as refused:
        await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
    assert refused.value.message == "The graders could not be started; run the checks again in a while."
    assert valkey_children() == before  # the process that could not start is reaped
