"""A script Valkey cannot stop ends its grader; the grader comes back, holding nothing.

These tests run a pool of ONE grader, so what happens while it restarts is
seen from outside: a run that arrives then waits in line for the grader
that is starting again and is graded by it; only a pool whose every grader
is down refuses with ``Restarting`` (503) until its cool-off has passed. The
grader here may use 2 GiB of address space, so a gigabyte ``string.rep``
stays inside one C call (where no Lua hook fires and SCRIPT KILL is never
heard) until the watchdog's SIGKILL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time

import pytest

from server.exercises import GraderPool, PoolSettings, Restarting, grade
from server.exercises import pool as pool_module
from server.exercises.grader_process import ProcessLimits
from tests.integration.exercises.support import COURSE, sandbox, valkey_children
from tests.support import pid_alive

LIVENESS = 3.0


async def until_up(pool: GraderPool) -> None:
    deadline = time.monotonic() + 5.0
    while pool.status().restarting and time.monotonic() < deadline:  # noqa: ASYNC110 -- polling the pool's own count
        await asyncio.sleep(0.01)
    assert pool.status().free == 1


async def test_a_script_stuck_in_a_c_call_is_ended_by_sigkill_and_its_grader_restarted() -> None:
    settings = PoolSettings(graders=1, process=ProcessLimits(address_space_mb=2048))
    async with GraderPool(settings) as pool:
        grader = pool.graders[0]
        old_pid = grader.process.pid if grader.process else None
        started = time.monotonic()
        graded = await grade(pool, "fan-in", "local s = string.rep('x', 2^30) return #s", run_for=sandbox())
        assert time.monotonic() - started < LIVENESS
        said = graded.checks[0].said
        assert said.startswith("stopped after 500 ms: the script did not finish, and Valkey did not answer SCRIPT KILL")
        assert "the grader was ended and started again" in said
        assert old_pid is not None and not pid_alive(old_pid)

        await until_up(pool)
        assert grader.starts == 2 and grader.process is not None and grader.process.pid != old_pid
        again = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
        assert again.passed == again.total


async def test_a_run_arriving_while_the_only_grader_restarts_waits_in_line_and_is_graded_by_it() -> None:
    places: list[int] = []
    async with GraderPool(PoolSettings(graders=1)) as pool:
        graded = await grade(pool, "fan-in", "redis.call('SET', KEYS[2], 'x') while true do end", run_for=sandbox())
        assert "the grader was ended and started again" in graded.checks[0].said
        assert pool.status().restarting == 1  # the restart runs in the background, after the answer
        again = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox(), on_place=places.append)
        assert again.passed == again.total
        assert places == [1, 0]  # first in line, then on the grader that came back
        assert pool.graders[0].starts == 2 and pool.status().free == 1


async def test_a_pool_whose_every_grader_is_down_for_good_refuses_a_run_with_restarting() -> None:
    async with GraderPool(PoolSettings(graders=1)) as pool:
        grader = pool.graders[0]
        grader.process_limits = ProcessLimits(address_space_mb=1)  # no restart can succeed now
        graded = await grade(pool, "fan-in", "redis.call('SET', KEYS[2], 'x') while true do end", run_for=sandbox())
        assert "the grader was ended and started again" in graded.checks[0].said
        deadline = time.monotonic() + 10.0  # liveness: three failed starts, then down
        while not pool.status().down and time.monotonic() < deadline:  # noqa: ASYNC110 -- polling the pool's own count
            await asyncio.sleep(0.05)
        assert pool.status().down == 1
        with pytest.raises(Restarting) as refused:
            await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
        assert refused.value.status == 503
        assert refused.value.as_json() == {"error": "No grader could be started again; "
                                                    "the site's operator has been told in its log."}


async def test_a_pool_whose_every_grader_is_down_tries_them_again_for_the_first_run_after_the_cool_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pool_module, "COOL_OFF", 1.0)
    async with GraderPool(PoolSettings(graders=1)) as pool:
        grader = pool.graders[0]
        fine = grader.process_limits
        grader.process_limits = ProcessLimits(address_space_mb=1)  # no restart can succeed now
        await grade(pool, "fan-in", "redis.call('SET', KEYS[2], 'x') while true do end", run_for=sandbox())
        deadline = time.monotonic() + 10.0  # liveness: three failed starts, then down
        while not pool.status().down and time.monotonic() < deadline:  # noqa: ASYNC110 -- polling the pool's own count
            await asyncio.sleep(0.05)
        assert pool.status().down == 1
        grader.process_limits = fine  # what stopped the starts has passed
        with pytest.raises(Restarting):  # within the cool-off: refused at once, nothing started
            await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
        assert pool.status().down == 1 and pool.status().restarting == 0
        await asyncio.sleep(1.0)
        graded = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())  # waits for the new start
        assert graded.passed == graded.total
        assert pool.status().down == 0 and pool.status().free == 1 and grader.starts == 2


async def test_a_grader_that_died_while_idle_is_started_again_and_the_run_waits_for_it() -> None:
    async with GraderPool(PoolSettings(graders=1)) as pool:
        grader = pool.graders[0]
        assert grader.process is not None and grader.process.proc is not None
        grader.process.proc.kill()  # a crash nobody saw: no run was on it
        grader.process.proc.wait()
        # found dead as it is handed out: the run waits for the new process, not for a 503
        graded = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
        assert graded.passed == graded.total and grader.starts == 2


async def test_stopping_the_pool_leaves_no_grader_process_behind() -> None:
    before = valkey_children()
    pool = GraderPool(PoolSettings(graders=2))
    await pool.start()
    pids = {grader.process.pid for grader in pool.graders if grader.process and grader.process.pid}
    assert len(pids) == 2 and pids <= valkey_children() - before
    await grade(pool, "fan-in", "redis.call('SET', KEYS[2], 'x') while true do end", run_for=sandbox())
    await pool.stop()  # a restart is under way: it is cancelled, and its new process ended too
    assert valkey_children() == before
    assert not any(pid_alive(pid) for pid in pids)


async def test_a_grader_killed_with_sigkill_while_idle_is_reaped_at_once_logged_and_the_next_runs_work(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="server.exercises.grader")
    async with GraderPool(PoolSettings(graders=2)) as pool:
        victim = pool.graders[0]
        assert victim.process is not None and victim.process.pid is not None
        pid = victim.process.pid
        os.kill(pid, signal.SIGKILL)  # as an operator or the OOM killer would, no run on it
        deadline = time.monotonic() + 5.0  # liveness: the loop hears the pidfd at once
        while (pid in valkey_children() or pool.status().free < 2) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        assert pid not in valkey_children()  # reaped: no zombie left for the next run to find
        assert victim.starts == 2 and victim.process is not None and victim.process.pid != pid
        assert pool.status().free == 2
        # the next runs, on both graders at once, are graded as usual
        graded = await asyncio.gather(*(grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox()) for _ in range(4)))
        assert [g.passed for g in graded] == [g.total for g in graded]
    said = [r.getMessage() for r in caplog.records if r.name == "server.exercises.grader"]
    assert len(said) == 1 and said[0] == f"grader 0 (pid {pid}) ended on its own (signal 9); it is started again"


async def test_the_only_grader_killed_with_sigkill_is_back_for_the_very_next_run() -> None:
    async with GraderPool(PoolSettings(graders=1)) as pool:
        grader = pool.graders[0]
        assert grader.process is not None and grader.process.pid is not None
        pid = grader.process.pid
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while grader.starts < 2 and time.monotonic() < deadline:  # noqa: ASYNC110 -- the grader's own count
            await asyncio.sleep(0.01)
        for _ in range(2):  # today's "next two runs" both graded
            graded = await grade(pool, "fan-in", COURSE["fan-in"], run_for=sandbox())
            assert graded.passed == graded.total
        assert pid not in valkey_children()
