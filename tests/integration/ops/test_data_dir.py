"""`emqlab serve` keeps its data in a data directory (real processes): a
restart keeps every key, a second site on the folder is refused, the old
state folder's secret moves in, `--ephemeral` keeps nothing, and `emqlab
reset` finds the running site through the folder."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import redis

from tests.integration.ops.serving import ROOT, Serve, alive, children, wait_for


def emqlab(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, check=False,
                          timeout=30, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_a_restart_on_the_same_data_directory_keeps_every_key_on_the_same_port(tmp_path: Path) -> None:
    with Serve(tmp_path) as first:
        url = first.running()["url"]
        r = first.redis()
        # names of the test's own: the site's reaper owns lab: keys
        r.mset({f"ops:kept:{n}": f"value {n}" for n in range(200)})
        r.hset("ops:room", mapping={"name": "Ada", "mode": "demo"})
        r.zadd("ops:seen", {"s0000000001": 1})
    assert first.stop() == 0
    with Serve(tmp_path) as second:
        assert second.running()["url"] == url  # the port kept in ports.json, taken again
        r = second.redis()
        assert r.get("ops:kept:0") == "value 0" and r.get("ops:kept:199") == "value 199"
        assert r.hgetall("ops:room") == {"name": "Ada", "mode": "demo"}
        assert r.zscore("ops:seen", "s0000000001") == 1
        names = ("appendonly", "appendfsync", "maxmemory", "maxmemory-policy", "dir")
        config = {str(k): str(v) for k, v in r.config_get(*names).items()}
    assert config["appendonly"] == "yes" and config["appendfsync"] == "everysec"
    assert config["maxmemory-policy"] == "noeviction" and int(config["maxmemory"]) == 256 * 1024 * 1024
    assert Path(config["dir"]) == tmp_path / "data" / "valkey"
    assert any((tmp_path / "data" / "valkey" / "appendonlydir").iterdir())


def test_a_second_serve_on_a_folder_in_use_refuses_and_names_the_process_holding_it(tmp_path: Path) -> None:
    with Serve(tmp_path) as first:
        assert first.proc is not None
        second = Serve(tmp_path)
        proc = second.launch()
        assert proc.wait(timeout=30) == 2
        said = second.said()
        assert f"in use by process {first.proc.pid}" in said and str(tmp_path / "data") in said
        assert not children(proc.pid)
        assert first.redis().ping()  # the first site's Valkey untouched


def test_an_old_state_folders_secret_is_moved_into_the_data_directory(tmp_path: Path) -> None:
    old = tmp_path / "state" / "secret"
    old.parent.mkdir(mode=0o700)
    old.write_text("a-secret-signed-in-learners-hold\n")
    with Serve(tmp_path):
        kept = tmp_path / "data" / "secret"
        assert kept.read_text().strip() == "a-secret-signed-in-learners-hold"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert not old.exists()
    with Serve(tmp_path):  # and it stays the same across restarts
        assert kept.read_text().strip() == "a-secret-signed-in-learners-hold"


def test_ephemeral_runs_on_a_temporary_folder_tells_the_workers_and_leaves_nothing_behind_on_sigterm(
        tmp_path: Path) -> None:
    site = Serve(tmp_path, "--ephemeral", "--workers", "2")
    with site:
        assert site.proc is not None
        said = site.said()
        folder = Path(said.split("emqlab reset --data-dir ", 1)[1].split("`", 1)[0])
        assert folder.is_dir() and "temporary, no persistence" in said
        workers = [pid for pid in children(site.proc.pid) if "multiprocessing" in Path(f"/proc/{pid}/cmdline")
                   .read_bytes().decode(errors="replace")]
        assert workers
        environ = dict(item.split("=", 1) for item in Path(f"/proc/{workers[0]}/environ").read_bytes()
                       .decode().split("\0") if "=" in item)
        assert environ["EMQLAB_EPHEMERAL"] == "1" and environ["EMQLAB_DATA_DIR"] == str(folder)
        config = redis.Redis.from_url(environ["EMQLAB_VALKEY_URL"], decode_responses=True).config_get("appendonly")
        assert config["appendonly"] == "no"
        valkeys = [pid for pid in children(site.proc.pid) if pid not in workers]
    assert site.stop(signal.SIGTERM) == 0
    assert "stopped valkey-server" in site.said()
    # multiprocessing's resource tracker ends when the last holder of its pipe (serve) has
    # ended, so it may outlive serve by a moment: a liveness deadline, not a timing
    wait_for(lambda: not any(alive(pid) for pid in [*valkeys, *workers]), 10.0, "every child of serve to end")
    assert not folder.exists()
    assert not (tmp_path / ".emqlab").exists() and not (tmp_path / "data").exists()


def test_reset_finds_the_running_sites_valkey_through_its_data_directory(tmp_path: Path) -> None:
    gone = emqlab("reset", "--print-url", "--data-dir", str(tmp_path / "data"))
    assert gone.returncode == 2 and "no site is running on" in gone.stderr
    with Serve(tmp_path) as site:
        url = site.running()["url"]
        found = emqlab("reset", "--print-url", "--data-dir", str(tmp_path / "data"))
        assert found.returncode == 0 and found.stdout.strip() == url
        # the default folder is .emqlab where it runs; EMQLAB_DATA_DIR names another
        by_env = emqlab("reset", "--print-url", env={"EMQLAB_DATA_DIR": str(tmp_path / "data")}, cwd=tmp_path)
        assert by_env.stdout.strip() == url
        named = emqlab("reset", "--print-url", env={"EMQLAB_VALKEY_URL": "redis://127.0.0.1:1/0"}, cwd=tmp_path)
        assert named.stdout.strip() == "redis://127.0.0.1:1/0"
        done = emqlab("reset", "--all", "--data-dir", str(tmp_path / "data"))
        assert done.returncode == 0, done.stderr
    assert site.stop() == 0
    assert not (tmp_path / "data" / "running.json").exists()
    after = emqlab("reset", "--print-url", "--data-dir", str(tmp_path / "data"))
    assert after.returncode == 2
