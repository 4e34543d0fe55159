"""What the boundary tests share: two sandboxes, their landed fan-in, and a
byte-for-byte picture of everything a sandbox holds in Valkey."""

from __future__ import annotations

from typing import Any

from redis.asyncio.cluster import RedisCluster

from server.console.api import ConsoleContext, ConsoleReply, queue_lock, run_line
from server.console.as_user import Runner
from server.emq import flows

SECRET = b"the site's secret, for the tests"
A, B = "saaaaaaaaaa", "sbbbbbbbbbb"  # the victim and the visitor who types
QUEUES = frozenset({"fanin", "native", "outbox.orders", "outbox.mail", "outbox.billing"})
FANIN = {
    "parent": {"id": "JOBparent", "payload": "build the report"},
    "children": [{"id": f"JOBchild{i}", "payload": f"part {i}"} for i in (1, 2, 3)],
}


async def land_fanin(conn: Any, sandbox: str) -> None:
    """The fan-in's starting scenario: JOBparent held on three pending children."""
    await flows.add(conn, f"{sandbox}.fanin", FANIN)


# The rows the fan-in lands, as the site tells the console (a held parent is in no state set).
LANDED_IDS = {"fanin": (FANIN["parent"]["id"], *(c["id"] for c in FANIN["children"]))}


def console(conn: Any, runner: Runner, sandbox: str, **options: Any) -> ConsoleContext:
    options.setdefault("ids", LANDED_IDS)
    return ConsoleContext(conn, runner, sandbox, QUEUES, queue_lock(conn, sandbox), **options)


async def line(context: ConsoleContext, text: str) -> ConsoleReply:
    return await run_line(context, text)


async def names(conn: Any, pattern: str) -> list[str]:
    """Every key matching `pattern` (every primary of a cluster)."""
    found = []
    async for name in conn.scan_iter(match=pattern, count=1000):
        found.append(name.decode() if isinstance(name, bytes) else name)
    return sorted(found)


async def held_by(conn: Any, sandbox: str) -> dict[str, tuple[bytes, int]]:
    """Every key of the sandbox, its emq: keys and the site's lab: keys of
    it: name -> (DUMP, PTTL)."""
    keys = [*await names(conn, f"emq:{{{sandbox}.*"), *await names(conn, f"lab:{{{sandbox}*")]
    return {k: (await conn.dump(k), await conn.pttl(k)) for k in keys}


async def drop_sandbox_users(conn: Any) -> None:
    """ACL DELUSER of every sandbox user and the idle user (on every primary):
    ACL users outlive FLUSHDB, and each test starts as after a restart."""
    if isinstance(conn, RedisCluster):
        nodes = conn.get_primaries()
        for node in nodes:
            users = await conn.execute_command("ACL", "USERS", target_nodes=node)
            mine = [u for u in users if u.startswith("sbx-") or u == "emqlab-idle"]
            if mine:
                await conn.execute_command("ACL", "DELUSER", *mine, target_nodes=node)
        return
    mine = [u for u in await conn.execute_command("ACL", "USERS") if u.startswith("sbx-") or u == "emqlab-idle"]
    if mine:
        await conn.execute_command("ACL", "DELUSER", *mine)
