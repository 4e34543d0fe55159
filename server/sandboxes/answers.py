"""A class's answers: each learner's verdict per question, kept on the class.

    lab:room:<CODE>:answers   a hash: "<widget>|<question>|<round>|<learner>" ->
                              {"value", "right", "step", "at"} as JSON

A learner's answer is written by the action that judged it, in the action's
last round trip (`answer_command`); the class page reads the hash whole and
counts it. `round` is "-" for a question met on one's own, else 1 or 2 of an
asked question (the class page's "Ask the class").
"""

from __future__ import annotations

import json
import time
from typing import Any


def answers_key(code: str) -> str:
    return f"lab:room:{code}:answers"


def answer_command(code: str, learner: str, widget: str, question: str, value: object, right: bool,
                   round_: int | None = None, step: int | None = None) -> tuple[Any, ...]:
    """The HSET that keeps one learner's latest answer to one question (per round)."""
    field = f"{widget}|{question}|{round_ if round_ is not None else '-'}|{learner}"
    kept = json.dumps({"value": value, "right": right, "step": step, "at": int(time.time() * 1000)})
    return ("HSET", answers_key(code), field, kept)
