"""The course's wrong variants of its own scripts, each written once, below every layer that uses it.

A variant is a body in ``scripts/variants/`` that stands in for a course script:
dressed in that script's own header (its KEYS/ARGV lines, read from the file the
pages list) and its ``-- @include`` markers expanded as the course's are, it is
the exact text Valkey runs. The early-release ``complete`` is the second
exercise's starter (the learner moves its decrement under the guard) and the
race widget's early-release script (dive 05 races it to show the count break):
one file, so the two can never drift apart. The body says nothing of its
mistake: finding it is the exercise.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Final

from server.emq import includes, registry

FOLDER: Final = "variants"


def folder() -> Path:
    return registry.SCRIPTS_DIR / FOLDER


def header(script: str) -> str:
    """The leading comment block of a course script: its summary, KEYS, ARGV, returns."""
    lines = []
    for line in registry.file_source(script).splitlines():
        if not line.startswith("--"):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


def dressed(script: str, where: str, body: str) -> str:
    """`body` under course script `script`'s header, its includes expanded (`where` names it in errors)."""
    return includes.expand(where, header(script) + "\n" + body, registry.SCRIPTS_DIR)


@cache
def source(name: str, script: str) -> str:
    """Variant `name` (``scripts/variants/<name>.lua``) of course script `script`, as Valkey runs it."""
    return dressed(script, f"{FOLDER}/{name}.lua", (folder() / f"{name}.lua").read_text("utf-8"))
