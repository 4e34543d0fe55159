"""Exercises: learners write a flow transition's Lua, and graders judge it on Valkey.

``grade`` checks the input, takes a turn in the ``pool`` (its fair line, each sandbox's share), compiles the
script on a ``grader`` (its own valkey-server), makes the run's user there and runs the exercise's
``checks``: each lands a flow in a scene, calls the script under the ``watchdog``, pictures the
keys into an ``outcome``.
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
