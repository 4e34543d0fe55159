"""The entry point: grade one learner's script for one exercise.

A failing check is a verdict, not an error: the run still answers a ``Graded`` (200), a runaway
script's too (its check says where it was stopped, and the checks after it were not run: it
would run away again, and every answer must come within 2 s). Refusals are ``GradeRefused``.
"""

from __future__ import annotations

import asyncio
import logging

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from server.emq.errors import EmqError
from server.exercises import catalogue
from server.exercises.catalogue import Exercise
from server.exercises.checks import CheckFailed, Run, Scene, clip
from server.exercises.errors import Restarting, check_script
from server.exercises.grader import Grader
from server.exercises.outcome import CheckResult, Graded
from server.exercises.pool import GraderPool, PlaceHook, Ticket
from server.exercises.watchdog import Halted

log = logging.getLogger(__name__)


async def grade(
    pool: GraderPool, exercise_name: str, script: bytes | str, run_for: str,
    *, on_place: PlaceHook | None = None, address: str | None = None,
) -> Graded:
    """Run every check of ``exercise_name`` against ``script`` for sandbox ``run_for`` (from
    client ``address``, whose runs share the line fairly); ``on_place`` hears its place in line.
    Every refusal but ``DoesNotCompile`` (422, from the grader) comes before any check runs."""
    exercise = catalogue.get(exercise_name)
    text = check_script(script)
    try:
        await pool.start()  # at once when the site started it already
    except (RuntimeError, RedisError, OSError) as exc:
        # the why (a log's tail, a path) is for the operator, not the learner
        log.error("the graders could not be started: %s", exc)
        raise Restarting("The graders could not be started; run the checks again in a while.") from exc
    ticket = pool.submit(run_for, on_place, address)
    grader = await pool.wait(ticket)
    # Once on its grader, a run goes to its end (a few seconds at most) even if the
    # caller stops waiting: a script left running would meet the next run.
    run = asyncio.ensure_future(_run_on(pool, ticket, grader, exercise, text))
    # The outcome of a run whose caller went away is read, so nothing is left
    # "never retrieved"; its refusal has nobody to answer.
    run.add_done_callback(lambda done: done.cancelled() or done.exception())
    return await asyncio.shield(run)


async def _run_on(pool: GraderPool, ticket: Ticket, grader: Grader, exercise: Exercise, text: str) -> Graded:
    try:
        sha = await grader.load(text)
        async with grader.run_user() as (run_id, client):
            return Graded(exercise=exercise.name, checks=await run_checks(exercise, Run(grader, client, sha, run_id)))
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        # The grader went away outside the learner's script (nothing to
        # judge it by): end it for a clean restart and say so, here and in the log.
        log.warning("grader %s stopped during a run (%s: %s): answered 503, starting it again",
                    grader.index, type(exc).__name__, exc)
        grader.end()
        raise Restarting("The grader stopped during the run and is starting again; "
                         "run the checks again in a moment.") from exc
    finally:
        pool.give_back(ticket, grader)


async def run_checks(exercise: Exercise, run: Run) -> tuple[CheckResult, ...]:
    """Every check in order; after a halt the rest are reported, not run."""
    results: list[CheckResult] = []
    stopped_at: str | None = None
    for index, check in enumerate(exercise.checks, 1):
        if stopped_at is not None:
            results.append(CheckResult(check.name, False, f"not run: the run stopped at “{stopped_at}”"))
            continue
        scene = Scene(run, index)
        try:
            results.append(CheckResult(check.name, True, await check.run(scene)))
            continue
        except CheckFailed as failed:
            said = str(failed)
        except Halted as halt:
            where = f" (in {scene.step})" if scene.step else ""
            said, stopped_at = f"{halt}{where}", check.name
        except (RedisConnectionError, RedisTimeoutError, OSError):
            # The grader died outside the script's own call (the keys it left
            # used the last of its memory, say): the run cannot go on there.
            run.grader.end()
            said = f"the grader stopped{scene.after_step} (out of memory, or it crashed) and was started again"
            stopped_at = check.name
        except (EmqError, ResponseError, ValueError) as exc:
            # The learner's script left keys the course's own scripts refuse
            # (a counter turned into a hash, a row without its fields): the
            # scenario cannot go on, and the check says what Valkey answered.
            said = f"the scenario could not go on{scene.after_step}: {clip(str(exc))}"
        results.append(scene.result(check.name, said))
    return tuple(results)
