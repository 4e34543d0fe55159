"""Why a run is refused (it never gets a ``Graded``): typed exceptions carrying their HTTP
status and a sentence for the learner, so the view needs no table of its own. ``check_script``
is the input gate (bytes or text in, the text out).
"""

from __future__ import annotations

import re
from typing import Final

from server.refusal import Refusal

MAX_SCRIPT_BYTES: Final = 16_384

# Valkey compiles an EVAL body as a chunk named ``user_script``; the first
# number after it is the line the compiler stopped at.
_LINE_RE: Final = re.compile(r"user_script:(\d+):")


class GradeRefused(Refusal):
    """Base of every refusal of a run; ``status`` is the HTTP status, ``message`` the sentence."""


class UnknownExercise(GradeRefused):
    status = 404


class NotUtf8(GradeRefused):
    status = 400


class TooLarge(GradeRefused):
    status = 413  # over ``MAX_SCRIPT_BYTES`` of UTF-8


class TooOften(GradeRefused):
    status = 429  # this sandbox runs the checks faster than its share allows


class QueueFull(GradeRefused):
    status = 429  # every place in the line is taken, or every place this address may hold


class Restarting(GradeRefused):
    status = 503  # no grader is up to take the run: they are starting again


class DoesNotCompile(GradeRefused):
    """Valkey's compiler said no: its message as Valkey wrote it, and the line it names (or None)."""

    status = 422

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line

    def as_json(self) -> dict[str, object]:
        return {"error": self.message, "line": self.line}


def check_script(script: bytes | str) -> str:
    """The script as text, or ``NotUtf8`` / ``TooLarge``. Text from JSON may hold lone
    surrogates, not UTF-8 either: ``surrogatepass`` keeps them for the strict decode to refuse."""
    raw = script.encode("utf-8", "surrogatepass") if isinstance(script, str) else bytes(script)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"The script is not UTF-8 text (byte {exc.start} cannot be read).") from exc
    if len(raw) > MAX_SCRIPT_BYTES:
        raise TooLarge(
            f"The script is {len(raw):,} bytes of UTF-8; the grader takes at most {MAX_SCRIPT_BYTES:,}."
        )
    if not text.strip():
        # Valkey would load an empty script; a run of it teaches nothing and
        # costs a grader, so it is refused like any text Lua cannot compile.
        raise DoesNotCompile("The script is empty: write the Lua the checks should run.", None)
    return text


def compile_refusal(valkey_message: str) -> DoesNotCompile:
    """A ``DoesNotCompile`` from the error SCRIPT LOAD answered, with its line."""
    found = _LINE_RE.search(valkey_message)
    line = int(found.group(1)) if found else None
    message = valkey_message.strip()
    if line is not None and f"line {line}" not in message:
        message = f"{message} (line {line})"
    return DoesNotCompile(message, line)
