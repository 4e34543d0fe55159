"""The console: `api.run_line` splits a learner's line (parse), checks it (allow, confine, plan),
charges it (budget) and runs it (run, as_user) as the sandbox's Valkey ACL user, the real
boundary: a line that slipped past the checks answers NOPERM.

Its partial on a dive shows the dive's example commands, its `try-N` options (`try-1: HGETALL …`).
"""

import re
from typing import Any

NAME = "console"  # the {widget} name that places the console on a dive
_TRY = re.compile(r"try-(\d+)")


def context(options: dict[str, Any]) -> dict[str, Any]:
    found = sorted((int(m[1]), str(v)) for k, v in options.items() if (m := _TRY.fullmatch(k)))
    return {"examples": [command for _, command in found]}
