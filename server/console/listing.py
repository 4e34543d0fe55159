"""KEYS and SCAN for the console, answered from the sandbox's own keys.

Key patterns cannot confine KEYS or SCAN, and the site running them would walk the whole keyspace;
instead each queue lists its keys the way a Reset finds them (`scripts/names.lua`), all queues in
one round trip, and the pattern is matched here with Valkey's glob rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from server.emq.includes import expand
from server.emq.script import Call, Script, execute, raise_first
from server.emq.wire import Conn, as_text
from server.sandboxes import keys

# The names rule is the widgets' own (`includes/queue_names.lua`, which clear.lua runs).
NAMES = Script("names", expand("names.lua", (Path(__file__).resolve().parent / "scripts" / "names.lua").read_text(
    encoding="utf-8"), Path(__file__).resolve().parents[1] / "widgets" / "scripts"))


async def keys_of(admin: Conn, sandbox: str, queues: Sequence[str],
                  ids: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """(name, type) of every key the sandbox's queues hold, sorted by name."""
    calls: list[Call | None] = []
    async with admin.pipeline(transaction=False) as pipe:
        for part in sorted(queues):
            queue = f"{sandbox}.{part}"
            call: Call = (NAMES, [keys.index_key(queue)], [f"emq:{{{queue}}}:", *ids.get(part, ())])
            NAMES.queue(pipe, call[1], call[2])
            calls.append(call)
        replies = raise_first(await execute(admin, pipe, calls))
    found: dict[str, str] = {}
    for reply in replies:
        flat = [as_text(item) for item in reply]
        found.update(zip(flat[::2], flat[1::2]))
    return sorted(found.items())


@lru_cache(maxsize=256)
def glob(pattern: str) -> re.Pattern[str]:
    """Valkey's glob (`*`, `?`, `[abc]`, `[^a-z]`, `\\x`) as a regular expression over a whole name."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        elif char == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1:i + 2] == "^" else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1:end]
                negate = body.startswith("^")
                body = body[1:] if negate else body
                escaped = "".join("\\" + c if c in "\\]^[" else c for c in body)
                out.append(f"[{'^' if negate else ''}{escaped}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)
