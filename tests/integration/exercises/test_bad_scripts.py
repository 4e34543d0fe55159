"""Scripts that run away, eat memory, or reach outside their run: answered in words, in time.

Each is answered within 3 s (a liveness deadline, generous on purpose: the
watchdog acts at 500 ms and SIGKILLs by 1,500 ms), nothing outside the run is
touched — the sentinel keys on every grader and every key of a separate
"site" valkey-server are byte-identical afterwards — and the next run, of
the course's own script, passes every check.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis.asyncio as aioredis

from server.emq import flows, jobs
from server.exercises import GraderPool, grade, watchdog
from server.valkey.process import ValkeyProcess
from tests.integration.exercises.support import COURSE, dump_all, plant, sandbox

LIVENESS = 3.0

BAD = {
    "a runaway loop": ("while true do end", "stopped after 500 ms: the script did not finish"),
    "a gigabyte string": ("local s = string.rep('x', 2^30) return #s", None),
    "FLUSHALL": ("return redis.call('FLUSHALL')", "no permissions to run the 'flushall' command"),
    "a key outside every run": ("return redis.call('SET', 'emq:{other}:x', 1)", "No permissions to access a key"),
    "another run's key": ("return redis.call('DEL', 'emq:{rzzzzzzzzzz.1.reports}:job:JOBpart1')",
                          "No permissions to access a key"),
    "a loop after a write": ("redis.call('SET', KEYS[2], 'x') while true do end", "could not stop it half-way"),
    # 40 levels reach the check; 5,000 stop redis-py's parser (a 500 once): both a verdict in words
    "a reply nested 40 deep": ("local t = {} local c = t for i = 1, 40 do c[1] = {} c = c[1] end return t",
                               "the script's reply nests deeper than 32 levels"),
    "a reply nested 5,000 deep": ("local t = {} local c = t for i = 1, 5000 do c[1] = {} c = c[1] end return t",
                                  "the script's reply nests deeper than 32 levels"),
    # allow-oom lifts maxmemory; the address-space limit then crashes the process,
    # which closes its connections or hangs in its crash report till the SIGKILL
    "writes past every memory limit": ("#!lua flags=allow-oom\nlocal s = string.rep('x', 2^20)\n"
                                       "for i = 1, 400 do redis.call('SET', KEYS[2] .. i, s) end",
                                       "started again"),
}


async def settled(pool: GraderPool) -> None:
    """Wait (liveness, not speed) until no grader is starting again."""
    deadline = time.monotonic() + LIVENESS
    while pool.status().restarting and time.monotonic() < deadline:  # noqa: ASYNC110 -- polling the pool's own count
        await asyncio.sleep(0.01)
    assert pool.status().restarting == 0


@pytest.mark.parametrize("label", list(BAD))
async def test_a_bad_script_is_answered_in_words_in_time_touching_nothing_outside_its_run(
    pool: GraderPool, valkey: ValkeyProcess, label: str
) -> None:
    script, words = BAD[label]
    site = aioredis.Redis.from_url(valkey.url)
    queue = f"{sandbox()}.fanin"
    await flows.add(site, queue, {"parent": {"id": "JOBsite", "payload": "p"},
                                  "children": [{"id": "JOBsite1", "payload": "c"}]})
    for grader in pool.graders:
        await plant(grader.url)
    site_before = await dump_all(valkey.url)
    graders_before = {grader.index: (grader.starts, await dump_all(grader.url)) for grader in pool.graders}

    started = time.monotonic()
    graded = await grade(pool, "fan-in", script, run_for=sandbox())
    assert time.monotonic() - started < LIVENESS

    assert graded.passed == 0 and all(check.said for check in graded.checks)
    first = graded.checks[0].said
    if words is None:  # the limit of the address space or the watchdog, whichever comes first
        assert "not enough memory" in first or "stopped after 500 ms" in first, first
    else:
        assert words in first, first
    await settled(pool)
    assert await dump_all(valkey.url) == site_before
    for grader in pool.graders:
        starts, keys = graders_before[grader.index]
        if grader.starts == starts:
            assert await dump_all(grader.url) == keys
        else:  # ended and started again: a new process that holds nothing
            assert await dump_all(grader.url) == {}
    if label in ("a loop after a write", "writes past every memory limit"):
        assert sum(grader.starts for grader in pool.graders) == sum(s for s, _ in graders_before.values()) + 1

    again = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
    assert again.passed == again.total
    await site.delete(*site_before)
    await site.aclose()


async def test_a_runaway_stops_the_run_and_the_checks_after_it_say_they_were_not_run(pool: GraderPool) -> None:
    graded = await grade(pool, "deliver", "while true do end", run_for=sandbox())
    first, *rest = graded.checks
    assert first.said == "stopped after 500 ms: the script did not finish (in the delivery of JOBmail1's completion)"
    assert {check.said for check in rest} == {"not run: the run stopped at “three children”"}


async def test_a_script_slow_in_every_call_is_stopped_by_the_runs_time_budget(pool: GraderPool) -> None:
    slow = "local t = redis.call('TIME') local s = t[1] * 1000000 + t[2] " \
           "repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - s > 250000 return 1"
    started = time.monotonic()
    graded = await grade(pool, "fan-in", slow, run_for=sandbox())
    assert time.monotonic() - started < LIVENESS
    saids = [check.said for check in graded.checks]
    assert any(said.startswith("stopped: the script had used the run's 600 ms of script time") for said in saids)
    assert saids[-1].startswith("not run: the run stopped at")


async def test_a_correct_script_is_charged_valkeys_time_not_the_stalls_of_a_busy_site(
    pool: GraderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A site serving a class on two cores reads a reply late. Here every call of
    # the learner's script holds the event loop 300 ms once Valkey has answered:
    # timed by the site's clock, the course's own script used up the run's
    # 600 ms budget by its third call and lost the checks after it.
    timed = watchdog._timed

    async def read_late(*args: Any) -> Any:
        answer = await timed(*args)
        time.sleep(0.3)  # noqa: ASYNC251 -- the busy site under test
        return answer

    monkeypatch.setattr(watchdog, "_timed", read_late)
    graded = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
    assert [check.said for check in graded.checks if not check.passed] == []


async def test_the_sites_own_actions_answer_normally_while_a_runaway_is_graded(
    pool: GraderPool, valkey: ValkeyProcess
) -> None:
    site = aioredis.Redis.from_url(valkey.url, decode_responses=True)
    queue = f"{sandbox()}.fanin"
    children = [f"JOBkid{i}" for i in range(10)]
    await flows.add(site, queue, {"parent": {"id": "JOBboss", "payload": "p"},
                                  "children": [{"id": c, "payload": "c"} for c in children]})
    run = asyncio.create_task(grade(pool, "fan-in", "while true do end", run_for=sandbox()))
    await asyncio.sleep(0.05)  # the runaway is on a grader now
    for child in children:  # ten widget actions on the site's own Valkey
        job_id, token = await jobs.claim(site, queue) or ("", 0)
        assert job_id == child
        await jobs.complete(site, queue, job_id, token, f"done {child}")
    assert not run.done()  # they did not wait for the grader
    assert await site.hget(f"emq:{{{queue}}}:job:JOBboss", "state") == "pending"
    graded = await run
    assert graded.checks[0].said.startswith("stopped after 500 ms")
    await site.delete(*[name async for name in site.scan_iter(match=f"emq:{{{queue}}}:*")])
    await site.aclose()
