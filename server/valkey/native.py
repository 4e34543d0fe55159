"""The EMQ module for Valkey: where `make module` builds it, and getting it loaded
(`--loadmodule` on a managed server; `MODULE LOAD` on an external one that allows it)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Final

from redis.exceptions import RedisClusterException, RedisError

from server.emq.wire import Conn, as_text
from server.valkey.client import command_on, primaries

log = logging.getLogger("emqlab.native")

ROOT: Final = Path(__file__).resolve().parents[2]
MODULE_PATH: Final = ROOT / "native" / "build" / "emq.so"  # absolute; it may not be built yet
MODULE_NAME: Final = "emq"  # what MODULE LIST calls it (emq_module.c's OnLoad)


def built() -> bool:
    return MODULE_PATH.is_file()


def module_names(listing: Any) -> set[str]:
    """Module names out of a MODULE LIST reply (redis-py makes each entry a dict)."""
    return {as_text(entry.get("name", entry.get(b"name"))) for entry in listing or []}


async def loaded(conn: Conn) -> bool:
    """Whether the server knows EMQ.COMPLETE: COMMAND GETKEYS answers for it."""
    try:
        await conn.command_getkeys("EMQ.COMPLETE", 2, "emq:{q}:active", "emq:{q}:job:JOBx", "JOBx", 1, "emq:{q}:")
    except RedisError:
        return False
    return True


async def ensure_loaded(conn: Conn) -> bool:
    """Load the module on every primary where it is missing: whether it is loaded now. Refusals
    are normal (MODULE LOAD is off on most servers): said in the log, nothing raised."""
    if await loaded(conn):
        return True
    if not built():
        log.warning("emqlab: the EMQ module is not built (%s): run `make module`", MODULE_PATH)
        return False
    try:
        for node in await primaries(conn):
            if MODULE_NAME not in module_names(await command_on(conn, node, "MODULE", "LIST")):
                await command_on(conn, node, "MODULE", "LOAD", str(MODULE_PATH))
    except (RedisError, RedisClusterException) as exc:
        log.warning("emqlab: this Valkey does not load the EMQ module (%s): the native widget says so", exc)
        return False
    return True
