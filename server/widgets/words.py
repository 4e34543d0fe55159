"""Small wording rules every widget's sentences share."""

from __future__ import annotations


def plural(n: int, one: str, many: str = "") -> str:
    """``1 completion``, ``2 completions``, ``1 entry``, ``3 entries``."""
    return f"{n} {one}" if n == 1 else f"{n} {many or one + 's'}"


def sentence(text: str) -> str:
    """``text`` with its first letter upper-case (a code name first stays as it is)."""
    if not text or not text[0].islower() or "_" in text.split(" ", 1)[0]:
        return text
    return text[0].upper() + text[1:]
