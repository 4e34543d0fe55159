"""The course's wrong variants of its own scripts, each written once for every layer using it.

A body in ``scripts/variants/``, dressed in its course script's header and with its
includes expanded, is the exact text Valkey runs (e.g. the early-release ``complete``:
the second exercise's starter and the race widget's script, one file so they never drift).
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
