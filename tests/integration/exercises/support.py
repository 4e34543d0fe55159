"""What the exercise tests share: the scripts they send and the keys they compare."""

from __future__ import annotations

import os
import secrets
import string
from pathlib import Path

import redis.asyncio as aioredis

from server.emq import includes, registry
from server.exercises import catalogue

VARIANTS = Path(__file__).resolve().parent / "variants"
# Every check of every exercise passes with the course's own script as its
# listing shows it; this is what a learner would type to reach it.
COURSE = {name: registry.script_source(catalogue.get(name).script) for name in catalogue.names()}
# Keys that belong to no run: a run may not touch them, whatever it sends.
SENTINELS = {
    "emq:{other}:x": "sentinel",
    "emq:{rzzzzzzzzzz.1.reports}:job:JOBpart1": "another run's row",
}


def variant(name: str) -> str:
    """A wrong variant from variants/, its includes expanded as a learner's paste would be."""
    text = (VARIANTS / f"{name}.lua").read_text("utf-8")
    return includes.expand(f"{name}.lua", text, registry.SCRIPTS_DIR)


def sandbox() -> str:
    """A sandbox id of the site's shape: ``s`` + 10 of [a-z0-9]."""
    return "s" + "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(10))


async def dump_all(url: str) -> dict[bytes, bytes | None]:
    """Every key of a server with its DUMP: byte-identical means untouched."""
    client = aioredis.Redis.from_url(url)
    try:
        names = sorted([name async for name in client.scan_iter(count=1000)])
        return {name: await client.dump(name) for name in names}
    finally:
        await client.aclose()


async def plant(url: str) -> None:
    """Write the sentinel keys on a grader (as its admin)."""
    client = aioredis.Redis.from_url(url)
    try:
        for name, value in SENTINELS.items():
            await client.set(name, value)
    finally:
        await client.aclose()


def valkey_children() -> set[int]:
    """The valkey-server processes this test process started and has not reaped."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)
        except OSError:
            continue
        name = fields[0].split("(", 1)[1]
        ppid = int(fields[1].split()[1])
        if ppid == os.getpid() and name.startswith("valkey-server"):
            found.add(int(entry))
    return found
