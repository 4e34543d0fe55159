"""`make serve` just works: it prints the URL to open, serves, and Ctrl-C (a
SIGINT to the terminal's whole process group) stops the site and its
valkey-server, leaving no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx

from server.valkey.process import free_port
from tests.integration.ops.serving import ROOT, UNSET, alive, children, command_of, wait_for


def descendants(pid: int) -> list[int]:
    found = children(pid)
    for child in list(found):
        found += descendants(child)
    return found


def test_make_serve_prints_the_url_serves_and_leaves_no_process_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["EMQLAB_STATE_DIR"] = str(tmp_path / "state")
    out = tmp_path / "make-serve.out"
    with out.open("wb") as sink:
        make = subprocess.Popen(
            ["make", "-s", "serve", f"SERVE_FLAGS=--port {port} --data-dir {tmp_path / 'data'}"],
            cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # a process group of its own, as a terminal gives it
        )
    try:
        wait_for(lambda: f"open http://127.0.0.1:{port}/" in out.read_text(), 60, "the URL printed")

        def answering() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answering, 30, "the site answering")
        family = descendants(make.pid)
        assert any("valkey-server" in command_of(pid) for pid in family), "serve started no valkey-server"
        os.killpg(make.pid, signal.SIGINT)  # Ctrl-C
        make.wait(timeout=20)
        wait_for(lambda: not any(alive(pid) for pid in family), 5, "every process gone")
        assert "stopped valkey-server" in out.read_text()
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait(timeout=5)
