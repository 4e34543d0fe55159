"""The line for a grader: bounded, first come first served, each sandbox kept to its share."""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Callable

from server.exercises import GradeRefused, GraderPool, PoolSettings, QueueFull, TooOften, grade
from tests.integration.exercises.support import COURSE, sandbox

FAN_IN = COURSE["fan-in"]


async def test_twenty_runs_from_five_sandboxes_at_once_all_complete_within_their_queue_bound() -> None:
    settings = PoolSettings(graders=2, queue_bound=18, sandbox_in_flight=4, sandbox_burst=4)
    async with GraderPool(settings) as pool:
        places: dict[int, list[int]] = defaultdict(list)
        longest = 0

        def heard(run: int) -> Callable[[int], None]:
            def on_place(place: int) -> None:
                nonlocal longest
                places[run].append(place)
                longest = max(longest, pool.status().waiting)
            return on_place

        sandboxes = [sandbox() for _ in range(5)]
        runs = [grade(pool, "fan-in", FAN_IN, run_for=sandboxes[i % 5], on_place=heard(i)) for i in range(20)]
        graded = await asyncio.gather(*runs)
        assert [g.passed for g in graded] == [g.total for g in graded]
        assert longest <= settings.queue_bound
        for run in range(20):  # each run heard its place fall to 0 (being graded), never rise
            heard_places = places[run]
            assert heard_places[-1] == 0
            assert heard_places == sorted(heard_places, reverse=True)
        assert max(places[run][0] for run in range(20)) == 18  # the last in line heard place 18 first
        assert pool.status().waiting == 0 and pool.status().free == 2


async def test_runs_over_the_queue_bound_are_refused_with_queue_full_at_once() -> None:
    settings = PoolSettings(graders=2, queue_bound=6, sandbox_in_flight=10, sandbox_burst=10)
    async with GraderPool(settings) as pool:
        sandboxes = [sandbox() for _ in range(5)]
        runs = [grade(pool, "fan-in", FAN_IN, run_for=sandboxes[i % 5]) for i in range(20)]
        answers = await asyncio.gather(*runs, return_exceptions=True)
        refused = [a for a in answers if isinstance(a, GradeRefused)]
        assert len(refused) == 12 and all(isinstance(a, QueueFull) and a.status == 429 for a in refused)
        assert "places in the line for a grader are taken" in refused[0].message
        assert sum(1 for a in answers if not isinstance(a, BaseException) and a.passed == a.total) == 8


async def test_a_sandbox_with_runs_in_flight_is_refused_more_until_they_finish() -> None:
    settings = PoolSettings(graders=1, sandbox_in_flight=2, sandbox_burst=100)
    async with GraderPool(settings) as pool:
        mine = sandbox()
        answers = await asyncio.gather(*(grade(pool, "fan-in", FAN_IN, run_for=mine) for _ in range(5)),
                                       return_exceptions=True)
        refused = [a for a in answers if isinstance(a, TooOften)]
        assert len(refused) == 3 and refused[0].status == 429
        assert refused[0].message.startswith("This sandbox already has 2 runs of the checks waiting or running")
        others = await grade(pool, "fan-in", FAN_IN, run_for=sandbox())  # another sandbox is not held back
        assert others.passed == others.total
        again = await grade(pool, "fan-in", FAN_IN, run_for=mine)  # and this one may run again now
        assert again.passed == again.total


async def test_a_sandbox_that_used_its_burst_waits_for_its_share_to_refill() -> None:
    settings = PoolSettings(graders=1, sandbox_in_flight=5, sandbox_burst=3, sandbox_per_minute=6)
    async with GraderPool(settings) as pool:
        mine = sandbox()
        for _ in range(3):
            await grade(pool, "fan-in", FAN_IN, run_for=mine)
        try:
            await grade(pool, "fan-in", FAN_IN, run_for=mine)
        except TooOften as refused:
            assert re.fullmatch(r"This sandbox ran the checks 3 times in a short while; try again in (9|10) s\.",
                                refused.message), refused.message  # a token every 10 s, less what the runs took
        else:
            raise AssertionError("a fourth run inside the burst was taken")


async def test_a_run_that_stops_waiting_gives_its_place_to_the_runs_behind_it() -> None:
    async with GraderPool(PoolSettings(graders=1, sandbox_in_flight=4)) as pool:
        heard: list[int] = []
        first = asyncio.create_task(grade(pool, "fan-in", "while true do end", run_for=sandbox()))
        await asyncio.sleep(0)
        leaving = asyncio.create_task(grade(pool, "fan-in", FAN_IN, run_for=sandbox()))
        await asyncio.sleep(0)
        staying = asyncio.create_task(grade(pool, "fan-in", FAN_IN, run_for=sandbox(), on_place=heard.append))
        await asyncio.sleep(0.05)
        assert heard == [2] and pool.status().waiting == 2
        leaving.cancel()
        await asyncio.sleep(0)
        assert heard == [2, 1] and pool.status().waiting == 1
        assert (await first).checks[0].said.startswith("stopped after 500 ms")
        graded = await staying
        assert graded.passed == graded.total and heard == [2, 1, 0]
        assert leaving.cancelled() and pool.status().free == 1


async def test_a_ticket_tells_its_places_to_its_listener_until_it_is_served() -> None:
    async with GraderPool(PoolSettings(graders=1, sandbox_in_flight=4)) as pool:
        seen: list[int] = []
        async with pool.turn(sandbox()):  # the one grader is taken
            ahead = pool.submit(sandbox())
            behind = pool.submit(sandbox(), on_place=seen.append)
            await asyncio.sleep(0.01)
            assert seen == [2]
        async with pool.serve(ahead) as grader:  # the turn ended: `ahead` has the grader now
            await asyncio.sleep(0.01)
            assert seen == [2, 1] and ahead.place == 0 and not behind.granted.done()
        async with pool.serve(behind) as again:
            assert again is grader and seen == [2, 1, 0]  # 0: on the grader
        assert seen == [2, 1, 0] and pool.status().free == 1


async def test_a_run_whose_caller_goes_away_ends_before_its_grader_takes_the_next() -> None:
    async with GraderPool(PoolSettings(graders=1)) as pool:
        runaway = asyncio.create_task(grade(pool, "fan-in", "while true do end", run_for=sandbox()))
        await asyncio.sleep(0.1)  # on the one grader, looping
        runaway.cancel()
        # this run waits for the runaway to be stopped, then finds an idle grader (no BUSY)
        graded = await grade(pool, "fan-in", FAN_IN, run_for=sandbox())
        assert graded.passed == graded.total
        assert runaway.cancelled()
