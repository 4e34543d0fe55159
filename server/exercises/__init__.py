"""Exercises: learners write a flow transition's Lua, and graders judge it on Valkey.

What the web layer calls (everything else here is how it is done):

* ``catalogue.get(name).as_json()`` — ``GET /api/exercises/<name>``;
  ``catalogue.names()`` — the exercises there are;
* ``grade(pool, name, script, run_for=sandbox_id, on_place=...)`` — the run,
  a ``Graded`` whose ``as_json()`` is the 200 body; refusals are
  ``GradeRefused`` with ``.status`` (400, 404, 413, 422, 429, 503) and
  ``.as_json()`` (``{"error": <sentence>}``);
* ``GraderPool(PoolSettings.from_env())`` — started at the site's start
  (``await pool.start()``, or ``async with``) and stopped at its end.

How a run flows: ``grade`` checks the input (``errors.check_script``), takes
a turn in the ``pool`` (its line and each sandbox's share, ``admission``),
compiles the script on its ``grader`` (a ``process`` of its own), creates
the run's Valkey user (``runuser``), and runs the exercise's checks
(``fanin_checks``, ``deliver_checks``): each lands a ``family`` with the
course's scripts in a ``scene``, calls the learner's script under the
``watchdog``, pictures the keys (``runkeys``) and judges them into an
``outcome``.
"""

from __future__ import annotations

from server.exercises import catalogue
from server.exercises.errors import (
    MAX_SCRIPT_BYTES,
    DoesNotCompile,
    GradeRefused,
    NotUtf8,
    QueueFull,
    Restarting,
    TooLarge,
    TooOften,
    UnknownExercise,
    check_script,
)
from server.exercises.grade import grade
from server.exercises.outcome import CheckResult, Graded, KeyShot, Picture
from server.exercises.pool import GraderPool, PoolStatus, Ticket
from server.exercises.settings import PoolSettings

__all__ = [
    "MAX_SCRIPT_BYTES",
    "CheckResult",
    "DoesNotCompile",
    "GradeRefused",
    "Graded",
    "GraderPool",
    "KeyShot",
    "NotUtf8",
    "Picture",
    "PoolSettings",
    "PoolStatus",
    "QueueFull",
    "Restarting",
    "Ticket",
    "TooLarge",
    "TooOften",
    "UnknownExercise",
    "catalogue",
    "check_script",
    "grade",
]
