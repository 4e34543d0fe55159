"""A checked plan run on Valkey as the sandbox's ACL user (SCAN and KEYS from the sandbox's own
keys: `listing`), and the lines the page prints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError

from server.console import listing, watchdog
from server.console.as_user import Runner
from server.console.confine import Confinement
from server.console.plan import Plan
from server.emq import registry
from server.emq.wire import Conn
from server.valkey import reply

SCAN_LIMIT: Final = 500  # keys a SCAN or KEYS answers at most
REPLY_LINES: Final = 200
REPLY_CHARS: Final = 16_000
NOPERM_WORDS: Final = (
    "(Valkey's ACL refused it: every console line runs as your sandbox's own Valkey user, which reaches "
    "your sandbox's keys emq:{<queue>}:… and the course's commands, nothing else.)"
)


async def execute(runner: Runner, admin: Conn, sandbox: str, found: Plan, where: Confinement,
                  ids: Mapping[str, Sequence[str]] | None = None) -> Any:
    """The reply of a checked plan; an error reply comes back as its exception."""
    if found.how == "script":
        assert found.script is not None
        call = runner.evalsha(sandbox, registry.script_source(found.script), found.keys, found.argv)
        node = admin.get_node_from_key(found.keys[0]) if isinstance(admin, RedisCluster) else None
        return await watchdog.watched(call, admin, node, found.script)  # SCRIPT KILL goes to that node
    if found.how == "scan":
        return await scan(admin, found, where, ids or {})
    return await runner.call(sandbox, found.args, found.route)


async def scan(admin: Conn, found: Plan, where: Confinement, ids: Mapping[str, Sequence[str]]) -> list[Any]:
    matches = listing.glob(found.args[0]).fullmatch
    wanted = found.scan_type.lower() if found.scan_type else None
    held = await listing.keys_of(admin, where.sandbox, sorted(where.writable), ids)
    names = [name for name, kind in held if matches(name) and (wanted is None or kind == wanted)]
    shown: list[Any] = sorted(where.short(n).encode() for n in names[:SCAN_LIMIT])
    if len(names) > SCAN_LIMIT:
        shown.append(f"(more than {SCAN_LIMIT} keys: narrow the pattern)".encode())
    return [b"0", shown] if found.scan_as == "SCAN" else shown


def printed(found: Plan, value: Any) -> list[str]:
    if isinstance(value, RedisError):
        return cut(error_lines(value))
    status = found.rule is not None and found.rule.status and not _bulk_instead(found.args)
    return cut(reply.lines(value, status))


def error_lines(exc: RedisError) -> list[str]:
    lines = reply.error_lines(exc)
    return [*lines, NOPERM_WORDS] if refused_by_acl(exc) else lines


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
