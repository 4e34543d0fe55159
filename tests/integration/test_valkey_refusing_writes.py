"""A Valkey that refuses writes for a while answers a worded 503, never a 500,
and nothing is written: MISCONF (it cannot persist: a real failed save on a
real server, its snapshot's name taken by a folder) and BUSY (a real script
holding it past `busy-reply-threshold`). Once Valkey can write again, the
same action works."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from server.valkey.process import ValkeyProcess
from tests.support import LiveSite, dumped, running

ACTION = "/api/widgets/fanin/complete-child"


@pytest.fixture
def own() -> Iterator[tuple[ValkeyProcess, LiveSite]]:
    with ValkeyProcess(home=None) as valkey, running(valkey.url) as site:
        yield valkey, site


def keys_and_values(r: redis.Redis) -> dict[str, object]:
    return dumped(r, skip=("lab:attempts:",))


def break_saving(r: redis.Redis) -> Path:
    """A save that really fails: snapshots on, and a folder where the snapshot file must go."""
    r.config_set("save", "3600 1")
    taken = Path(str(r.config_get("dir")["dir"])) / str(r.config_get("dbfilename")["dbfilename"])
    taken.mkdir()
    (taken / "in-the-way").write_text("x")
    r.bgsave()
    deadline = time.monotonic() + 10
    while (info := r.info("persistence"))["rdb_bgsave_in_progress"] or info["rdb_last_bgsave_status"] == "ok":
        assert time.monotonic() < deadline, "the save did not fail"
        time.sleep(0.05)
    return taken


def test_a_valkey_that_cannot_persist_misconf_answers_a_worded_503_writes_nothing_then_recovers(
        own: tuple[ValkeyProcess, LiveSite]) -> None:
    _, site = own
    client, r = site.visitor(), site.redis()
    assert client.post(ACTION, json={}).status_code == 200
    taken = break_saving(r)
    with pytest.raises(redis.ResponseError, match=r"^MISCONF"):
        r.set("probe", "1")  # Valkey itself refuses writes now
    before = keys_and_values(r)
    for path in (ACTION, "/api/widgets/fanin/reset", "/api/widgets/enqueue-stepper/next"):
        answer = client.post(path, json={})
        assert answer.status_code == 503, (path, answer.text)
        assert "cannot save its data" in answer.json()["error"] and answer.headers["retry-after"] == "30"
    assert keys_and_values(r) == before
    for item in taken.iterdir():
        item.unlink()
    taken.rmdir()
    r.bgsave()
    deadline = time.monotonic() + 10
    while (answer := client.post(ACTION, json={})).status_code != 200:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)


def test_a_valkey_held_by_a_long_script_busy_answers_a_worded_503_and_serves_once_it_ends(
        own: tuple[ValkeyProcess, LiveSite]) -> None:
    _, site = own
    client, r = site.visitor(), site.redis()
    assert client.post(ACTION, json={}).status_code == 200
    r.config_set("busy-reply-threshold", "100")
    looping = threading.Thread(target=lambda: _loop_until_killed(site), daemon=True)
    looping.start()
    try:
        deadline = time.monotonic() + 10
        while True:  # until Valkey answers BUSY to others
            try:
                r.ping()
            except redis.ResponseError as exc:
                assert str(exc).startswith("BUSY") or "BUSY" in repr(exc), exc
                break
            assert time.monotonic() < deadline, "the script did not hold Valkey"
            time.sleep(0.05)
        answer = client.post(ACTION, json={})
        assert answer.status_code == 503, answer.text
        assert "busy with a long-running script" in answer.json()["error"]
    finally:
        _script_kill(site)
        looping.join(timeout=10)
    assert client.post(ACTION, json={}).status_code == 200


def _loop_until_killed(site: LiveSite) -> None:
    # a read-only runaway: SCRIPT KILL may stop it
    with pytest.raises(redis.ResponseError):
        site.redis().eval("while true do end", 0)


def _script_kill(site: LiveSite) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            site.redis().script_kill()
            return
        except redis.ResponseError as exc:
            if "NOTBUSY" in str(exc):
                return
            time.sleep(0.05)
