"""Running a checked plan on Valkey, and the answer the page prints.

Plain commands go out as typed, with their keys moved into the sandbox; the
course's scripts run through `registry.run` (EVALSHA of the file the server
runs); SCAN and KEYS walk the sandbox's keys only and answer them in the
learner's short form. Valkey's error replies become `(error) …` lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from redis.asyncio.cluster import RedisCluster
from redis.client import NEVER_DECODE
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from server.console.allow import GROWS, GROWTH_CAP, Refusal
from server.console.confine import Confinement
from server.console.plan import Plan
from server.emq import registry
from server.emq.errors import EmqError
from server.emq.wire import Conn
from server.valkey import reply
from server.web.errors import is_out_of_memory
from server.widgets import snapshot

SCAN_LIMIT = 500  # keys a SCAN or KEYS answers at most
REPLY_LINES, REPLY_CHARS = 200, 16_000


class AnswerJSON(TypedDict):
    """One console answer as the page reads it (and the transcript keeps it)."""

    command: str
    reply_lines: list[str]
    kind: Literal["reply", "error"]


@dataclass(frozen=True)
class Answer:
    command: str
    reply_lines: list[str]
    kind: Literal["reply", "error"]

    def as_json(self) -> AnswerJSON:
        return {"command": self.command, "reply_lines": self.reply_lines, "kind": self.kind}


async def send(conn: Conn, args: list[str], key: str | None) -> Any:
    """One command, its reply as Valkey sent it.

    The name goes out as bytes: redis-py looks its reply converters up by the
    name as a string, so none applies and the reply stays as Valkey shaped it.
    On a cluster the command goes straight to the node owning the key's slot
    (the cluster client would route by the name, which it wants as a string).
    """
    name, rest = args[0].encode(), args[1:]
    undecoded: dict[str, Any] = {NEVER_DECODE: []}
    if not isinstance(conn, RedisCluster):
        return await conn.execute_command(name, *rest, **undecoded)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
    await conn.initialize()  # a no-op once the slot map is loaded
    node = conn.get_node_from_key(key) if key is not None else conn.get_default_node()
    if node is None:  # a loaded slot map always has a default node; a 503 if not
        raise RedisConnectionError("the cluster has no node to send this to")
    return await node.execute_command(name, *rest, **undecoded)


async def check_growth(conn: Conn, found: Plan) -> None:
    if found.grows is None or found.rule is None:
        return
    try:
        size = await send(conn, [GROWS[found.rule.name], found.grows.real], found.grows.real)
    except ResponseError:
        return  # another type: the write itself answers WRONGTYPE
    if int(size) >= GROWTH_CAP:
        raise Refusal(409, f"that key holds {size} members; the console grows a key to at most {GROWTH_CAP}.")


async def scan(conn: Conn, found: Plan, where: Confinement) -> list[Any]:
    names: list[bytes] = []
    async for name in conn.scan_iter(match=found.args[0], count=1000, _type=found.scan_type):
        names.append(name)
        if len(names) > SCAN_LIMIT:
            break
    shown = sorted(where.short(n.decode("utf-8", "replace")) for n in names[:SCAN_LIMIT])
    if len(names) > SCAN_LIMIT:
        shown.append(f"(more than {SCAN_LIMIT} keys: narrow the pattern)")
    return ["0", shown] if found.scan_as == "SCAN" else list(shown)


async def execute(conn: Conn, found: Plan, where: Confinement) -> Answer:
    """Run a checked plan; Valkey's error replies become `(error) …` lines."""
    try:
        if found.how == "script":
            assert found.script is not None
            value = await registry.run(conn, found.script, found.keys, found.argv)
            return Answer(found.command, cut(reply.lines(value)), "reply")
        if found.how == "scan":
            return Answer(found.command, cut(reply.lines(await scan(conn, found, where))), "reply")
        await check_growth(conn, found)
        key = found.args[1] if found.rule is not None and found.rule.keys != "none" and len(found.args) > 1 else None
        if found.rule is not None and found.rule.keys == "numkeys":
            key = found.args[2]
        value = await send(conn, found.args, key)
        await index(conn, found)
        status = found.rule is not None and found.rule.status and not _bulk_instead(found.args)
        return Answer(found.command, cut(reply.lines(value, status)), "reply")
    except (EmqError, ResponseError) as exc:
        if is_out_of_memory(exc):
            raise  # a fault of Valkey's, not a reply: the view answers 503 (views/console.py)
        return Answer(found.command, error_lines(exc), "error")


def error_lines(exc: Exception) -> list[str]:
    """Valkey's error reply as the transcript shows it, `(error) …`, however
    it travelled (plain, or out of a script the host library ran)."""
    cause = exc if isinstance(exc, ResponseError) else exc.__cause__
    return reply.error_lines(cause) if isinstance(cause, ResponseError) else [f"(error) {exc}"]


async def index(conn: Conn, found: Plan) -> None:
    """Name every key a write touched in its queue's index of extra keys, so
    the widget's snapshot shows it and its Reset removes it, whatever its name
    (a widget finds its keys by name, never by SCAN)."""
    if not found.writes or found.how != "direct":
        return
    by_queue: dict[str, list[str]] = {}
    for names in found.written.values():
        for name in names:  # emq:{<sandbox>.<queue>}:… names its queue in its hashtag
            queue = name[name.find("{") + 1:name.find("}")]
            by_queue.setdefault(queue, []).append(name)
    for queue, names in by_queue.items():
        await send(conn, ["SADD", snapshot.index_key(queue), *names], snapshot.index_key(queue))


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
