"""The site's own Lua scripts (``sandboxes/scripts/*.lua``), registered once per client.

They guard the site, not a queue: admitting a sandbox under the cap and
forgetting an idle one. Like EchoMQ's scripts they are files, run by SHA
through redis-py's ``register_script`` (which loads them again on NOSCRIPT).
"""

from __future__ import annotations

import weakref
from functools import cache
from pathlib import Path
from typing import Any, Final

from redis.commands.core import AsyncScript

from server.emq.wire import Conn
from server.valkey.scripts import SiteScript

SCRIPTS_DIR: Final = Path(__file__).resolve().parent / "scripts"
NAMES: Final = ("activity", "admit", "count", "unregister_if_idle")

# Weak by client, so a closed, dropped client takes its scripts with it (the
# script's own back-reference to the client is made weak for the same reason).
_registered: weakref.WeakKeyDictionary[Any, dict[str, AsyncScript]] = weakref.WeakKeyDictionary()


@cache
def source(name: str) -> str:
    """The text of one site script, exactly as the file holds it."""
    if name not in NAMES:
        raise KeyError(f"no site script {name!r}")
    return (SCRIPTS_DIR / f"{name}.lua").read_text(encoding="utf-8")


@cache
def pipelined(name: str) -> SiteScript:
    """Site script ``name`` for queuing on a pipeline as a plain EVALSHA
    (loaded on a NOSCRIPT reply): the way in's `activity` and `count` ride
    in the widget lock's round trip (server/web/entry.py)."""
    source(name)  # refuses a name that is not a site script
    return SiteScript(SCRIPTS_DIR / f"{name}.lua")


def script(conn: Conn, name: str) -> AsyncScript:
    """The registered script ``name`` on ``conn`` (made on first use)."""
    scripts = _registered.setdefault(conn, {})
    found = scripts.get(name)
    if found is None:
        found = scripts[name] = conn.register_script(source(name))
        found.registered_client = weakref.proxy(conn)
    return found
