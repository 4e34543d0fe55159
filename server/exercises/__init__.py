"""Exercises: learners write a flow transition's Lua, and graders judge it on Valkey.

The web layer calls ``catalogue`` (``GET /api/exercises/<name>``), ``grade`` (the run: a
``Graded``, or a ``GradeRefused`` carrying its HTTP status) and ``GraderPool`` (started and
stopped with the site). A run: ``grade`` checks the input, takes a turn in the ``pool`` (its
``line`` and each sandbox's share, ``admission``), compiles the script on its ``grader`` (a
``process`` of its own), creates the run's user (``runuser``), and runs the exercise's checks
(``checks``, ``fanin_checks``, ``deliver_checks``): each lands a ``family`` with the course's
scripts in a ``scene``, calls the learner's script under the ``watchdog``, pictures the keys
(``runkeys``) and judges them into an ``outcome``.
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
)
from server.exercises.grade import grade
from server.exercises.outcome import Graded
from server.exercises.pool import GraderPool
from server.exercises.settings import PoolSettings

__all__ = [
    "MAX_SCRIPT_BYTES",
    "DoesNotCompile",
    "GradeRefused",
    "Graded",
    "GraderPool",
    "NotUtf8",
    "PoolSettings",
    "QueueFull",
    "Restarting",
    "TooLarge",
    "TooOften",
    "UnknownExercise",
    "catalogue",
    "grade",
]
