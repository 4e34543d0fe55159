"""The course's wrong variants of its own scripts, each written once for every layer using it.

A body in ``scripts/variants/``, dressed in its course script's header and with its
includes expanded, is the exact text Valkey runs (e.g. the early-release ``complete``:
the second exercise's starter and the race widget's script, one file so they never drift).
"""

from __future__ import annotations

from functools import cache
from itertools import takewhile

from server.emq import includes, registry


def dressed(script: str, where: str, body: str) -> str:
    """`body` under course script `script`'s header (its leading comment block: summary, KEYS, ARGV,
    returns), its includes expanded (`where` names it in errors)."""
    header = takewhile(lambda line: line.startswith("--"), registry.file_source(script).splitlines())
    return includes.expand(where, "\n".join(header) + "\n\n" + body, registry.SCRIPTS_DIR)


@cache
def source(name: str, script: str) -> str:
    """Variant `name` (``scripts/variants/<name>.lua``) of course script `script`, as Valkey runs it."""
    where = f"variants/{name}.lua"
    return dressed(script, where, (registry.SCRIPTS_DIR / where).read_text("utf-8"))
