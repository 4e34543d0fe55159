"""The exercise grader: a graded run of each exercise's own course script on
an idle pool, beside the same scenarios run directly with the course's
script (no run user, watchdog, compile or sweep); runs per second the
default pool holds; and how fast the watchdog answers a runaway and brings
a SIGKILLed grader back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.stats import distribution
from server.emq import registry
from server.emq.errors import EmqError
from server.exercises import GraderPool, PoolSettings, catalogue, grade
from server.exercises.checks import Run, Scene
from server.exercises.grader import Grader, new_run_id, run_pattern, sweep
from server.exercises.watchdog import Erred, Replied, plain

OPEN = PoolSettings(sandbox_in_flight=64, sandbox_burst=1_000_000, sandbox_per_minute=1e9, queue_bound=256)


class DirectScene(Scene):
    """A scene whose transition is the course's own script, run by the admin."""

    def __init__(self, run: Run, index: int, script: str) -> None:
        super().__init__(run, index)
        self.script = script

    async def call(self, keys: Sequence[str], args: Sequence[str | int]) -> Replied | Erred:
        try:
            return Replied(plain(await registry.run(self.admin, self.script, keys, args)))
        except EmqError as exc:
            return Erred(exc.message)


async def direct_run(grader: Grader, name: str) -> None:
    exercise = catalogue.get(name)
    run = Run(grader, grader.admin_client(), "", new_run_id())
    for index, check in enumerate(exercise.checks, 1):
        await check.run(DirectScene(run, index, exercise.script))
    await sweep(grader.admin_client(), run_pattern(run.run_id))


async def timings(pool: GraderPool, name: str, runs: int) -> tuple[list[float], list[float]]:
    """``runs`` graded runs and ``runs`` direct ones, interleaved so that a busy
    moment of the machine weighs on both alike (one grader each)."""
    script = registry.script_source(catalogue.get(name).script)
    graded: list[float] = []
    direct: list[float] = []
    async with pool.turn("sbench00002") as held:
        for _ in range(runs):
            started = time.perf_counter()
            result = await grade(pool, name, script, run_for="sbench00001")
            graded.append(time.perf_counter() - started)
            assert result.passed == result.total, result.failed()
            started = time.perf_counter()
            await direct_run(held, name)
            direct.append(time.perf_counter() - started)
    return graded, direct


async def throughput(seconds: float, names: list[str]) -> float:
    """Runs per second with every sandbox running back to back (default pool size)."""
    async with GraderPool(PoolSettings(sandbox_in_flight=4, sandbox_burst=1_000_000,
                                       sandbox_per_minute=1e9)) as pool:
        scripts = {name: registry.script_source(catalogue.get(name).script) for name in names}
        done = 0
        stop_at = time.perf_counter() + seconds

        async def learner(number: int) -> None:
            nonlocal done
            turn = 0
            while time.perf_counter() < stop_at:
                name = names[(number + turn) % len(names)]
                await grade(pool, name, scripts[name], run_for=f"sload{number:06d}")
                done += 1
                turn += 1

        started = time.perf_counter()
        await asyncio.gather(*(learner(i) for i in range(8)))
        return done / (time.perf_counter() - started)


async def watchdog_answers(pool: GraderPool, tries: int) -> tuple[list[float], list[float]]:
    """Seconds until a runaway is answered; seconds until a SIGKILLed grader is back."""
    answered: list[float] = []
    back: list[float] = []
    for _ in range(tries):
        started = time.perf_counter()
        await grade(pool, "fan-in", "while true do end", run_for="sbench00003")
        answered.append(time.perf_counter() - started)
        await grade(pool, "fan-in", "redis.call('SET', KEYS[2], 1) while true do end", run_for="sbench00003")
        started = time.perf_counter()
        while pool.status().restarting:  # noqa: ASYNC110 -- the pool's own count, polled
            await asyncio.sleep(0.001)
        back.append(time.perf_counter() - started)
    return answered, back


async def measure(runs: int, seconds: float, tries: int) -> dict[str, Any]:
    names = catalogue.names()
    rows: dict[str, dict[str, Any]] = {}
    async with GraderPool(OPEN) as pool:
        for name in names:
            await timings(pool, name, min(5, runs))  # warm: scripts loaded, connections open
            graded, direct = await timings(pool, name, runs)
            rows[name] = {"checks": len(catalogue.get(name).checks), "graded_ms": distribution(graded, 1000),
                           "direct_ms": distribution(direct, 1000)}
        answered, back = await watchdog_answers(pool, tries)
    per_second = await throughput(seconds, names)
    return {"runs": runs, "seconds": seconds, "tries": tries, "graders": PoolSettings().graders,
            "exercises": rows, "runs_per_second": round(per_second, 1),
            "runaway_answered_ms": distribution(answered, 1000), "sigkilled_back_ms": distribution(back, 1000)}


def run(runs: int = 200, seconds: float = 5.0, tries: int = 5) -> dict[str, Any]:
    """The three measures (see the module's docstring), as a dict for the report."""
    return asyncio.run(measure(runs, seconds, tries))
