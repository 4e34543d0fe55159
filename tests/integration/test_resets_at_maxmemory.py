"""Resets work over maxmemory (noeviction): a learner's Reset, the instructor's reset of a
sandbox, reset-all and `emqlab reset --all` each free the memory, while every other write
answers 503 in words that say what is true (a Reset still works).

Valkey runs with a small maxmemory; a learner's sandbox holds keys its queue's index
lists (as the console's writes are listed), and maxmemory is then set under what Valkey holds."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
import redis

from server.valkey.process import ValkeyProcess
from tests.support import ROOT, LiveSite, running, sandbox_of

MB = 1024 * 1024
BLOB = "x" * 256 * 1024


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess(maxmemory="8mb") as valkey, running(valkey.url) as live:
        yield live


@pytest.fixture
def fresh(site: LiveSite) -> LiveSite:
    r = site.redis()
    r.config_set("maxmemory", 8 * MB)
    r.flushdb()
    return site


def used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


def maxmemory(r: redis.Redis) -> int:
    return int(r.config_get("maxmemory")["maxmemory"])


def over(r: redis.Redis) -> bool:
    """Valkey at maxmemory: a 4 KB write is refused (it counts the command it is reading)."""
    try:
        r.set("probe", "x" * 4096)
    except redis.exceptions.OutOfMemoryError:
        return True
    r.delete("probe")
    return False


def landed_learner(site: LiveSite) -> tuple[httpx.Client, str]:
    client = site.visitor()
    assert client.get("/api/widgets/fanin/state").status_code == 200  # landed, admitted, registered
    return client, sandbox_of(client)


def fill(r: redis.Redis, sandbox: str, blobs: int = 12) -> list[str]:
    """3 MB of keys in the sandbox's fan-in queue, listed in its index; then maxmemory lowered
    1 MB under what Valkey holds, so it is well over it (not within a command's bytes of it)."""
    queue = f"{sandbox}.fanin"
    written = [f"emq:{{{queue}}}:blob{i}" for i in range(blobs)]
    for name in written:
        r.sadd(f"lab:{{{queue}}}:index", name)
        r.set(name, BLOB)
    r.config_set("maxmemory", used(r) - MB)
    assert over(r)
    return written


def filled_by(site: LiveSite, sandboxes: list[str]) -> redis.Redis:
    """Every sandbox's share of the memory, the last one taking Valkey past maxmemory."""
    r = site.redis()
    for sandbox in sandboxes[:-1]:
        r.set(f"emq:{{{sandbox}.fanin}}:blob", BLOB)
        r.sadd(f"lab:{{{sandbox}.fanin}}:index", f"emq:{{{sandbox}.fanin}}:blob")
    fill(r, sandboxes[-1], blobs=4)  # 1 MB here and a blob in each other: the others' must go too
    return r


def test_over_maxmemory_an_action_and_a_console_line_answer_503_saying_a_reset_still_works(fresh: LiveSite) -> None:
    client, sandbox = landed_learner(fresh)
    fill(fresh.redis(), sandbox)
    action = client.post("/api/widgets/fanin/claim", json={})
    assert action.status_code == 503 and "A Reset still works there and frees memory" in action.json()["error"]
    line = client.post("/api/console", json={"command": "SET emq:{fanin}:note hello"})
    assert line.status_code == 503 and "A Reset still works there and frees memory" in line.json()["error"]
    assert "recovers by itself" not in action.text + line.text
    read = client.post("/api/console", json={"command": "ZCARD emq:{fanin}:pending"})
    assert read.status_code == 200 and read.json()["reply_lines"] == ["(integer) 3"]  # a read still answers


def test_a_learners_reset_frees_memory_over_maxmemory_and_lands_the_scenario_again(fresh: LiveSite) -> None:
    client, sandbox = landed_learner(fresh)
    r = fresh.redis()
    blobs = fill(r, sandbox)
    answer = client.post("/api/widgets/fanin/reset", json={})
    assert answer.status_code == 200, answer.text
    assert not over(r) and r.exists(*blobs) == 0 and used(r) < maxmemory(r)
    snapshot = client.get("/api/widgets/fanin/state").json()["snapshot"]
    assert snapshot["landed"]
    assert client.post("/api/widgets/fanin/claim", json={}).status_code == 200  # writes work again


def test_the_instructors_reset_of_one_sandbox_frees_memory_over_maxmemory(fresh: LiveSite) -> None:
    _, sandbox = landed_learner(fresh)
    instructor = fresh.instructor()  # signed in before Valkey filled up
    r = fresh.redis()
    blobs = fill(r, sandbox)
    answer = instructor.post("/instructor/reset", json={"sandbox": sandbox})
    assert answer.status_code == 200, answer.text
    assert not over(r) and r.exists(*blobs) == 0 and used(r) < maxmemory(r)


def test_reset_all_frees_memory_over_maxmemory(fresh: LiveSite) -> None:
    learners = [landed_learner(fresh)[1] for _ in range(3)]
    instructor = fresh.instructor()
    r = filled_by(fresh, learners)
    answer = instructor.post("/instructor/reset", json={"all": True})
    assert answer.status_code == 200, answer.text
    assert not over(r) and used(r) < maxmemory(r)
    assert not any(r.scan_iter("emq:{*}:blob*"))


def test_emqlab_reset_all_frees_memory_over_maxmemory_and_exits_0(fresh: LiveSite) -> None:
    learners = [landed_learner(fresh)[1] for _ in range(2)]
    r = filled_by(fresh, learners)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EMQLAB_VALKEY_URL": fresh.valkey_url}
    done = subprocess.run([sys.executable, "-m", "server.cli", "reset", "--all"], check=False, env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 sandboxes reset" in done.stdout
    assert not over(r) and used(r) < maxmemory(r)
    assert not any(r.scan_iter("emq:{*}:blob*"))
