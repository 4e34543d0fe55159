"""A checked plan run on Valkey as the sandbox's ACL user, and the lines the page prints.

KEYS and SCAN are answered from the sandbox's own keys: key patterns cannot confine them, and the
site running them would walk the whole keyspace. Instead each queue lists its keys the way a Reset
finds them (`scripts/names.lua`), all queues in one round trip, matched here with Valkey's glob.

A course script answers within `SCRIPT_MS`, or the site sends SCRIPT KILL to its node (heard past
`busy-reply-threshold`, the managed Valkey's `client.BUSY_REPLY_MS`). A backstop: every script
bounds its work (includes/guards.lua). A script that wrote cannot be stopped (`UNKILLABLE`): it is
waited for and logged. EMQ.* is not watched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisError

from server.console.allow import Refusal
from server.console.as_user import Runner
from server.console.confine import Confinement
from server.console.plan import Plan
from server.emq import registry
from server.emq.includes import expand
from server.emq.script import Call, Script, raise_first
from server.emq.script import execute as run_calls
from server.emq.wire import Conn, as_text
from server.sandboxes import keys
from server.valkey import reply
from server.valkey.client import ask_script_kill

log = logging.getLogger("emqlab.console")

SCAN_LIMIT: Final = 500  # keys a SCAN or KEYS answers at most
REPLY_LINES: Final = 200
REPLY_CHARS: Final = 16_000
NOPERM_WORDS: Final = (
    "(Valkey's ACL refused it: every console line runs as your sandbox's own Valkey user, which reaches "
    "your sandbox's keys emq:{<queue>}:… and the course's commands, nothing else.)"
)
SCRIPT_MS: Final = 250  # a console script's budget: the course's take well under a millisecond
KILL_WAIT_S: Final = 6.0  # SCRIPT KILL is heard after busy-reply-threshold (an external Valkey's: 5 s by default)
STOPPED: Final = ("{script} ran past the console's {ms} ms budget, so the site stopped it with SCRIPT KILL before "
                  "it wrote anything: nothing was written. The course's scripts answer at once; check the counts "
                  "and arguments you gave it.")
# The names rule is the widgets' own (`includes/queue_names.lua`, which clear.lua runs).
HERE = Path(__file__).resolve().parent
NAMES = Script("names", expand("names.lua", (HERE / "scripts" / "names.lua").read_text(encoding="utf-8"),
                               HERE.parent / "widgets" / "scripts"))


async def execute(runner: Runner, admin: Conn, sandbox: str, found: Plan, where: Confinement,
                  ids: Mapping[str, Sequence[str]] | None = None) -> Any:
    """The reply of a checked plan; an error reply comes back as its exception."""
    if found.how == "script":
        assert found.script is not None
        call = runner.evalsha(sandbox, registry.script_source(found.script), found.keys, found.argv)
        node = admin.get_node_from_key(found.keys[0]) if isinstance(admin, RedisCluster) else None
        return await watched(call, admin, node, found.script)  # SCRIPT KILL goes to that node
    if found.how == "scan":
        return await scan(admin, found, where, ids or {})
    return await runner.call(sandbox, found.args, found.route)


async def watched(call: Awaitable[Any], admin: Conn, node: ClusterNode | None, script: str) -> Any:
    """The reply of `call`; `Refusal` 422 when SCRIPT KILL stopped it past `SCRIPT_MS`."""
    task = asyncio.ensure_future(call)
    await asyncio.wait({task}, timeout=SCRIPT_MS / 1000)
    if task.done():
        return task.result()
    answer = await ask_script_kill(admin, KILL_WAIT_S, node)
    if answer == "OK":
        await asyncio.wait({task}, timeout=KILL_WAIT_S)  # its reply: Valkey's "Script killed by user"
        if not task.done():
            task.cancel()
        with contextlib.suppress(BaseException):
            await task
        log.warning("console script %s ran past %d ms: stopped with SCRIPT KILL", script, SCRIPT_MS)
        raise Refusal(422, STOPPED.format(script=script, ms=SCRIPT_MS), "stopped")
    if answer != "NOTBUSY":  # it wrote (UNKILLABLE), or Valkey did not answer: nothing to do but wait
        log.error("console script %s ran past %d ms and SCRIPT KILL answered %s", script, SCRIPT_MS, answer)
    return await task


async def scan(admin: Conn, found: Plan, where: Confinement, ids: Mapping[str, Sequence[str]]) -> list[Any]:
    """SCAN or KEYS over (name, type) of every key the sandbox's queues hold."""
    calls: list[Call | None] = []
    async with admin.pipeline(transaction=False) as pipe:
        for part in sorted(where.writable):
            queue = f"{where.sandbox}.{part}"
            call: Call = (NAMES, [keys.index_key(queue)], [f"emq:{{{queue}}}:", *ids.get(part, ())])
            NAMES.queue(pipe, call[1], call[2])
            calls.append(call)
        replies = raise_first(await run_calls(admin, pipe, calls))
    held: dict[str, str] = {}
    for flat in ([as_text(item) for item in each] for each in replies):
        held.update(zip(flat[::2], flat[1::2]))
    matches = glob(found.args[0]).fullmatch
    wanted = found.scan_type.lower() if found.scan_type else None
    names = [name for name, kind in sorted(held.items()) if matches(name) and (wanted is None or kind == wanted)]
    shown: list[Any] = sorted(where.short(n).encode() for n in names[:SCAN_LIMIT])
    if len(names) > SCAN_LIMIT:
        shown.append(f"(more than {SCAN_LIMIT} keys: narrow the pattern)".encode())
    return [b"0", shown] if found.rule is not None and found.rule.name == "SCAN" else shown


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
        elif char == "[" and (end := pattern.find("]", i + 2 if pattern[i + 1:i + 2] == "^" else i + 1)) != -1:
            body = pattern[i + 1:end]
            negate = body.startswith("^")
            escaped = "".join("\\" + c if c in "\\]^[" else c for c in body[negate:])
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def printed(found: Plan, value: Any) -> list[str]:
    if isinstance(value, RedisError):
        line = f"(error) {reply.error_text(value)}"
        return cut([line, NOPERM_WORDS] if refused_by_acl(value) else [line])
    status = found.rule is not None and found.rule.status and not _bulk_instead(found.args)
    return cut(reply.lines(value, status))


def refused_by_acl(exc: RedisError) -> bool:
    """NOPERM, or a script stopped by the ACL ('ACL failure in script')."""
    text = reply.error_text(exc)
    return text.startswith("NOPERM") or "ACL failure" in text


def _bulk_instead(args: list[str]) -> bool:
    """SET … GET and PING <message> answer a bulk string, not a status."""
    name = args[0].upper()
    return (name == "SET" and any(a.upper() == "GET" for a in args[3:])) or (name == "PING" and len(args) > 1)


def cut(lines: list[str]) -> list[str]:
    """At most REPLY_LINES lines and REPLY_CHARS characters, with a visible note."""
    kept: list[str] = []
    size = 0
    for line in lines:
        if len(kept) >= REPLY_LINES or size + len(line) > REPLY_CHARS:
            kept.append(f"(… {len(lines) - len(kept)} more lines not shown: the console prints "
                        f"at most {REPLY_LINES} lines, {REPLY_CHARS} characters)")
            break
        kept.append(line)
        size += len(line)
    return kept
