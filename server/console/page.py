"""The console's partial: the dive's example commands, its `try-N` options (`try-1: HGETALL …`)."""

from __future__ import annotations

import re
from typing import Any

NAME = "console"  # the {widget} name that places the console on a dive
_TRY = re.compile(r"try-(\d+)")


def context(options: dict[str, Any]) -> dict[str, Any]:
    found = sorted((int(m[1]), str(v)) for k, v in options.items() if (m := _TRY.fullmatch(k)))
    return {"examples": [command for _, command in found]}
