"""Small wording rules every widget's sentences share."""

from __future__ import annotations


def plural(n: int, one: str, many: str = "") -> str:
    """``1 completion``, ``2 completions``, ``1 entry``, ``3 entries``."""
    return f"{n} {one}" if n == 1 else f"{n} {many or one + 's'}"

