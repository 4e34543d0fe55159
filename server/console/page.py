"""What the console's partial shows: the dive's example commands.

A dive places the console with its own examples in the directive body, one
per `try-N` option, written with the queues of the dive's widgets:

    ```{widget} console
    try-1: HGETALL emq:{fanin}:job:JOBparent
    try-2: GET emq:{fanin}:job:JOBparent:dependencies
    ```

The page shows each as a "try: …" button that puts the command in the input
and runs it; without JavaScript they are listed as text.
"""

from __future__ import annotations

import re
from typing import Any

NAME = "console"  # the {widget} name that places the console on a dive
_TRY = re.compile(r"try-(\d+)")


def examples(options: dict[str, Any]) -> list[str]:
    """The `try-N` options in the order of N."""
    found = [(int(m[1]), str(v)) for k, v in options.items() if (m := _TRY.fullmatch(k))]
    return [command for _, command in sorted(found)]


def context(options: dict[str, Any]) -> dict[str, Any]:
    return {"examples": examples(options)}
